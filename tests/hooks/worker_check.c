#include "worker_check.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

void fail(const char *fmt, ...)
{
    pthread_mutex_lock(&fail_lock);
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
    pthread_mutex_unlock(&fail_lock);
}
