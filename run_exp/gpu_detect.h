/* How many GPUs this machine offers to run_exp's workers. */
#ifndef RUN_EXP_GPU_DETECT_H
#define RUN_EXP_GPU_DETECT_H

/* Counts the GPUs `nvidia-smi -L` lists (limited by CUDA_VISIBLE_DEVICES when set). -1 when
 * there is no GPU: nvidia-smi is missing, fails, or lists none. */
int gpu_count_detect(void);

#endif
