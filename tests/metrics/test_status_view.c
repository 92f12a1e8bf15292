/* The service's view of a status snapshot (service/status_view.h): names cleaned to UTF-8 byte by
 * byte, one row per pid with the counters summed (suite 15). */
#define GY_TEST_MAIN
#include <string.h>

#include "harness.h"
#include "status_view.h"

static const char *cleaned(const char *in)
{
    static char buf[64];
    snprintf(buf, sizeof buf, "%s", in);
    gy_utf8_clean(buf);
    return buf;
}

TEST(well_formed_utf8_is_kept)
{
    CHECK(strcmp(cleaned("plain-name_1.0"), "plain-name_1.0") == 0);
    CHECK(strcmp(cleaned("mod\xc3\xa9le \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf"),
                 "mod\xc3\xa9le \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf") == 0);
}

TEST(every_malformed_byte_becomes_a_question_mark)
{
    CHECK(strcmp(cleaned("bad\xffname"), "bad?name") == 0);
    CHECK(strcmp(cleaned("cut\xc3"), "cut?") == 0);                   /* a character cut at the end */
    CHECK(strcmp(cleaned("cut\xe2\x82"), "cut??") == 0);              /* three bytes, two there */
    CHECK(strcmp(cleaned("\xc0\xaf"), "??") == 0);                     /* overlong '/' */
    CHECK(strcmp(cleaned("\xe0\x80\xaf"), "???") == 0);                /* overlong, three bytes */
    CHECK(strcmp(cleaned("\xed\xa0\x80"), "???") == 0);                /* a surrogate (U+D800) */
    CHECK(strcmp(cleaned("\xf4\x90\x80\x80"), "????") == 0);           /* over U+10FFFF */
    CHECK(strcmp(cleaned("\x80x\xbf"), "?x?") == 0);                   /* lone continuation bytes */
    char name[64];
    snprintf(name, sizeof name, "%s", cleaned("\xc3\xa9\xc3"));
    CHECK(strcmp(name, "\xc3\xa9?") == 0, "%s", name);
}

TEST(one_row_per_pid_with_counters_summed)
{
    static struct gy_status st;
    memset(&st, 0, sizeof st);
    st.nprocs = 3;
    st.procs[0] = (struct gy_status_proc){.pid = 7, .priority = 0, .state = "running", .partition = "-"};
    st.procs[1] = (struct gy_status_proc){.pid = 9, .priority = 0, .state = "running", .partition = "-"};
    st.procs[2] = (struct gy_status_proc){.pid = 7, .priority = 1, .state = "blocked", .partition = "active"};
    st.procs[0].launches = 5;
    st.procs[2].launches = 2;
    st.procs[2].waits = 3;
    st.procs[0].launched_devices = 1;
    st.procs[2].launched_devices = 2;
    snprintf(st.procs[0].name, sizeof st.procs[0].name, "model");
    gy_status_merge(&st);
    CHECK(st.nprocs == 2);
    CHECK(st.procs[0].pid == 7 && st.procs[1].pid == 9);
    CHECK(st.procs[0].launches == 7 && st.procs[0].waits == 3);
    CHECK(st.procs[0].priority == 1 && strcmp(st.procs[0].state, "blocked") == 0);
    CHECK(strcmp(st.procs[0].partition, "active") == 0 && st.procs[0].launched_devices == 3);
    CHECK(strcmp(st.procs[0].name, "model") == 0);
}
