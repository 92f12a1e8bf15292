/* torchvision 0.26 model names by task. Validation rejects names outside this list before any
 * worker starts; the worker itself builds them with torchvision.models.get_model(). */
#include "models.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define C TASK_CLASSIFICATION
#define D TASK_DETECTION
#define S TASK_SEGMENTATION
static const struct known_model MODELS[] = {
    {"alexnet", C}, {"convnext_tiny", C}, {"convnext_small", C}, {"convnext_base", C}, {"convnext_large", C},
    {"densenet121", C}, {"densenet161", C}, {"densenet169", C}, {"densenet201", C},
    {"efficientnet_b0", C}, {"efficientnet_b1", C}, {"efficientnet_b2", C}, {"efficientnet_b3", C},
    {"efficientnet_b4", C}, {"efficientnet_b5", C}, {"efficientnet_b6", C}, {"efficientnet_b7", C},
    {"efficientnet_v2_s", C}, {"efficientnet_v2_m", C}, {"efficientnet_v2_l", C}, {"googlenet", C},
    {"inception_v3", C}, {"maxvit_t", C}, {"mnasnet0_5", C}, {"mnasnet0_75", C}, {"mnasnet1_0", C},
    {"mnasnet1_3", C}, {"mobilenet_v2", C}, {"mobilenet_v3_large", C}, {"mobilenet_v3_small", C},
    {"regnet_x_400mf", C}, {"regnet_x_800mf", C}, {"regnet_x_1_6gf", C}, {"regnet_x_3_2gf", C},
    {"regnet_x_8gf", C}, {"regnet_x_16gf", C}, {"regnet_x_32gf", C}, {"regnet_y_400mf", C},
    {"regnet_y_800mf", C}, {"regnet_y_1_6gf", C}, {"regnet_y_3_2gf", C}, {"regnet_y_8gf", C},
    {"regnet_y_16gf", C}, {"regnet_y_32gf", C}, {"regnet_y_128gf", C}, {"resnet18", C}, {"resnet34", C},
    {"resnet50", C}, {"resnet101", C}, {"resnet152", C}, {"resnext50_32x4d", C}, {"resnext101_32x8d", C},
    {"resnext101_64x4d", C}, {"shufflenet_v2_x0_5", C}, {"shufflenet_v2_x1_0", C}, {"shufflenet_v2_x1_5", C},
    {"shufflenet_v2_x2_0", C}, {"squeezenet1_0", C}, {"squeezenet1_1", C}, {"swin_t", C}, {"swin_s", C},
    {"swin_b", C}, {"swin_v2_t", C}, {"swin_v2_s", C}, {"swin_v2_b", C}, {"vgg11", C}, {"vgg11_bn", C},
    {"vgg13", C}, {"vgg13_bn", C}, {"vgg16", C}, {"vgg16_bn", C}, {"vgg19", C}, {"vgg19_bn", C},
    {"vit_b_16", C}, {"vit_b_32", C}, {"vit_l_16", C}, {"vit_l_32", C}, {"vit_h_14", C},
    {"wide_resnet50_2", C}, {"wide_resnet101_2", C},
    {"fasterrcnn_resnet50_fpn", D}, {"fasterrcnn_resnet50_fpn_v2", D}, {"fasterrcnn_mobilenet_v3_large_fpn", D},
    {"fasterrcnn_mobilenet_v3_large_320_fpn", D}, {"fcos_resnet50_fpn", D}, {"retinanet_resnet50_fpn", D},
    {"retinanet_resnet50_fpn_v2", D}, {"ssd300_vgg16", D}, {"ssdlite320_mobilenet_v3_large", D},
    {"maskrcnn_resnet50_fpn", D}, {"maskrcnn_resnet50_fpn_v2", D}, {"keypointrcnn_resnet50_fpn", D},
    {"deeplabv3_resnet50", S}, {"deeplabv3_resnet101", S}, {"deeplabv3_mobilenet_v3_large", S},
    {"fcn_resnet50", S}, {"fcn_resnet101", S}, {"lraspp_mobilenet_v3_large", S},
};
#undef C
#undef D
#undef S

const struct known_model *model_find(const char *name)
{
    for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0]; i++)
        if (strcmp(MODELS[i].name, name) == 0)
            return &MODELS[i];
    return NULL;
}

const char *model_task_name(enum model_task task)
{
    switch (task) {
    case TASK_CLASSIFICATION: return "classification";
    case TASK_DETECTION: return "detection";
    case TASK_SEGMENTATION: return "segmentation";
    }
    return "?";
}

void model_suggest(const char *name, char *out, int out_len)
{
    int used = 0, found = 0;
    out[0] = '\0';
    /* Names sharing the longest possible prefix (at least 3 characters) with the one given. */
    for (size_t prefix = strlen(name); prefix >= 3 && !found; prefix--) {
        for (size_t i = 0; i < sizeof MODELS / sizeof MODELS[0] && found < 6; i++) {
            if (strncmp(MODELS[i].name, name, prefix) != 0)
                continue;
            int n = snprintf(out + used, (size_t)(out_len - used), "%s%s", found ? ", " : "", MODELS[i].name);
            if (n < 0 || n >= out_len - used)
                return;
            used += n;
            found++;
        }
    }
}

void model_simulated_job(const struct known_model *m, int h, int w, int batch, int *kernels, int *kernel_us)
{
    double ref_ms, ref_pixels;
    switch (m->task) {
    case TASK_DETECTION: ref_ms = 15.0, ref_pixels = 720.0 * 1280.0, *kernels = 200; break;
    case TASK_SEGMENTATION: ref_ms = 20.0, ref_pixels = 520.0 * 520.0, *kernels = 150; break;
    default: ref_ms = 3.0, ref_pixels = 224.0 * 224.0, *kernels = 100; break;
    }
    /* Time grows with the square root of the pixels: a coarse fit of the two FasterRCNN sizes. */
    double ms = ref_ms * sqrt((double)h * (double)w / ref_pixels) * (batch > 0 ? batch : 1);
    int us = (int)(ms * 1000.0 / *kernels);
    *kernel_us = us > 1 ? us : 1;
}
