/* The policies: the one list of them. What a begin does about lower-priority work already
 * queued on the GPU; every policy closes the gate. The enum, the names the tools and the JSON
 * files accept, their help texts, the segment's range check and the Python package's
 * gpuyield.POLICIES expand this table. Adding a policy is one row here plus its behaviour in
 * gy_begin (its case in begin_drains, gate.c: the build fails until it has one). Rows keep their
 * order: the value is stored in the segment.
 *   drain: wait until lower work has finished, so the job runs alone (any GPU, no MPS needed);
 *   corun: return at once and let the job's kernels run beside it. Under MPS (with the lower
 *          processes at MPS client priority below normal) the job's blocks take SMs as the lower
 *          kernels' blocks retire instead of waiting for the whole queue to drain;
 *   partition: like corun, and lower processes keep launching during the job, their kernels
 *          confined by their hook to a green context holding a few SMs (their async copies go
 *          there too; hooks/partition.c); without MPS a begin drains as under drain (gate.c).
 *   guarded: like partition, but each job gets an arm, stop (as corun) or a partition of 16, 32
 *          to 120 SMs, chosen by measurement at its begin (controller/guarded.h); without MPS, drain.
 *          The default under MPS (gy_policy_default).
 * X(enum suffix, name, what a job does under it, meant for MPS) */
#ifndef GY_POLICIES_H
#define GY_POLICIES_H

#define GY_POLICIES(X)                                                                                 \
    X(DRAIN, "drain", "a job waits until lower work has drained", false)                               \
    X(CORUN, "corun", "a job starts at once beside lower work (under MPS)", true)                      \
    X(PARTITION, "partition", "lower work keeps running on a few SMs during a job (under MPS)", true)      \
    X(GUARDED, "guarded", "each job gets stop or a partition, kept only while the job stays as fast as "   \
                          "under stop (under MPS)", true)

#define GY_POLICY_ENUM_ROW(suffix, name, what, mps) GY_POLICY_##suffix,
enum gy_policy { GY_POLICIES(GY_POLICY_ENUM_ROW) GY_POLICY_COUNT };
#undef GY_POLICY_ENUM_ROW

/* The default rule, in words, for help texts; gy_policy_default is the rule itself. */
#define GY_POLICY_DEFAULT_TEXT "guarded under MPS, else drain"

#endif
