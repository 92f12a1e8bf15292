/* The torchvision models a worker can build by name, with their task (which decides how the
 * worker feeds them) and the per-job cost the simulated stand-in worker pretends to take. */
#ifndef RUN_EXP_MODELS_H
#define RUN_EXP_MODELS_H

enum model_task { TASK_CLASSIFICATION, TASK_DETECTION, TASK_SEGMENTATION };

struct known_model {
    const char *name;
    enum model_task task;
};

/* NULL when torchvision (0.26) has no classification/detection/segmentation model of that name. */
const struct known_model *model_find(const char *name);
const char *model_task_name(enum model_task task);
/* Up to n known names close to name (same prefix), joined by ", " into out; "" when none. */
void model_suggest(const char *name, char *out, int out_len);

/* Simulated job of the stand-in worker: kernels and per-kernel microseconds for one image of
 * h x w pixels (batch multiplies the kernel time). Coarse, but keeps the reference's ratios:
 * FasterRCNN ~15 ms at 720x1280 and ~30 ms at 1440x2560, resnet50 ~3 ms at 224x224. */
void model_simulated_job(const struct known_model *m, int h, int w, int batch, int *kernels, int *kernel_us);

#endif
