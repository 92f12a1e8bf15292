"""Writes an experiment file for run_exp's tests: a base of two small models, edited by
--set PATH=JSON (PATH like models.0.priority), --del PATH, --raw TEXT (write TEXT as is).
    python3 make_config.py OUT --image IMG --out-dir DIR [--set ...] [--del ...]"""
import argparse
import json


def base(image, out_dir):
    def model(name, priority, sleep):
        return {"model_name": "fasterrcnn_resnet50_fpn", "model_weight": "FasterRCNN_ResNet50_FPN_Weights",
                "sleep_time": sleep, "input_file_path": image, "output_file_path": out_dir,
                "output_file_name": name, "priority": priority, "resize": False, "resize_size": [720, 1280],
                "control": {"control": False, "controlsync": False, "controlEvent": False,
                            "queue_limit": {"sync": 1, "event_group": 2}}}
    return {"models": [model("model_A", 0, 0), model("model_B", 1, 0.05)], "exp_dur": 1, "device_id": 0}


def walk(doc, path):
    keys = [int(k) if k.isdigit() else k for k in path.split(".")]
    for k in keys[:-1]:
        doc = doc[k]
    return doc, keys[-1]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--image", required=True)
    p.add_argument("--out-dir", required=True)
    p.add_argument("--set", action="append", default=[])
    p.add_argument("--del", dest="delete", action="append", default=[])
    a = p.parse_args()
    doc = base(a.image, a.out_dir)
    for item in a.set:
        path, value = item.split("=", 1)
        parent, key = walk(doc, path)
        if isinstance(parent, list) and key == len(parent):
            parent.append(json.loads(value))
        else:
            parent[key] = json.loads(value)
    for path in a.delete:
        parent, key = walk(doc, path)
        del parent[key]
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=2)


main()
