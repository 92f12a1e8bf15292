#!/usr/bin/env bash
# Suite 85: packaging and deployment. The version in one place (VERSION: --version of every tool,
# gpuyield.__version__, gpuyield.pc), the licence, bench programs out of bin/, `pip install`
# (--target, a fresh venv with the whole tool, a plain venv, editable; offline: --no-build-isolation
# --no-index) on a copy of the tree, `make install` into a DESTDIR with pkg-config, and the example
# manifests and the Dockerfile in deploy/.
set -u
. "$ROOT/tests/lib/suite.sh"
PYTHON=${PYTHON:-python3}
cd "$ROOT"
VERSION=$(cat VERSION)
T=$(mktemp -d)
at_exit 'rm -rf "$T"'

check version_file_is_semver grep -qxE '[0-9]+\.[0-9]+\.[0-9]+' VERSION
check licence_is_apache_2 grep -q "Apache License" LICENSE
check licence_is_whole grep -q "END OF TERMS AND CONDITIONS" LICENSE
for tool in expcontroller run_exp nsight-parser gpuyield-standin; do
    expect "version_$tool" 0 "^$tool \(gpuyield\) $VERSION\$" "$BUILD/bin/$tool" --version
done
expect version_python 0 "^$VERSION\$" env PYTHONPATH="$BUILD/python" "$PYTHON" -c 'import gpuyield; print(gpuyield.__version__)'

# Benchmark programs live in build/bench, and none of them runs its benchmark on --help.
check bench_not_in_bin bash -c "! ls '$BUILD/bin' | grep -qE 'bench|launch-rate|launch-cost'"
expect bench_gate_help 0 "^usage: gate-bench" timeout 5 "$BUILD/bench/gate-bench" --help
expect bench_gate_bad_argument 2 "takes no arguments" timeout 5 "$BUILD/bench/gate-bench" 100
check make_sh_writes_no_pth bash -c "! grep -q '\.pth' '$ROOT/make.sh'"

# A build folder reused with other flags (SAN, CUDA_HOME) makes its objects again: build.mk keeps
# what they were compiled under (obj/.build-flags). One object in a scratch folder: up to date
# under its own flags, out of date under others (make -q: 0 up to date, 1 not).
make_q() { make -q -s -f build.mk O="$T/flags" ROOT="$ROOT" CUDA_HOME= "$@" "$T/flags/obj/controller/version.o"; }
make -s -f build.mk O="$T/flags" ROOT="$ROOT" CUDA_HOME= SAN= "$T/flags/obj/controller/version.o" > /dev/null 2>&1
check build_flags_same_flags_up_to_date make_q SAN=
out_of_date() { ! make_q "$@"; }
check build_flags_other_flags_rebuild out_of_date SAN=asan

# pip, offline, on a copy of the tree (what git tracks plus what it does not ignore): --target,
# a fresh venv with the whole tool (the extension, the hook, the tools, run_exp --simulate), and
# editable. The copy's build/setuptools is shared: the C build is made once, then reused.
copy_tree() {
    mkdir -p "$1"
    { git ls-files -z; git ls-files -z --others --exclude-standard; } | xargs -0 cp --parents -t "$1" 2> /dev/null
}
# The build backend's check: without setuptools (a Python 3.12 venv) or without wheel beside an
# older setuptools (a plain venv offline), one line saying what to install, and nothing else.
backend_check() { # backend_check HIDDEN_MODULE: the backend imported with that module made unimportable
    (cd "$ROOT/pyext" && "$PYTHON" -c "import sys; sys.modules['$1'] = None; import gpuyield_build" 2>&1)
}
for hidden in setuptools wheel; do
    out=$(backend_check "$hidden"); rc=$?
    if [ "$hidden" = wheel ] && "$PYTHON" -c 'import re, setuptools, sys; sys.exit(tuple(map(int, re.findall(r"\d+", setuptools.__version__)[:2])) < (70, 1))' 2> /dev/null; then
        check pip_backend_needs_no_wheel_with_new_setuptools test "$rc" -eq 0 -a -z "$out"
    elif [ "$rc" -eq 1 ] && [ "$(wc -l <<< "$out")" -eq 1 ] && grep -q "^gpuyield: cannot build: .* $hidden.*python3-setuptools and python3-wheel.*--system-site-packages, and pip install --no-build-isolation \.$" <<< "$out"; then
        pass "pip_backend_without_${hidden}_says_so_in_one_line"
    else
        fail "pip_backend_without_${hidden}_says_so_in_one_line" "exit $rc: $out"
    fi
done
if ! "$PYTHON" -c 'import setuptools, wheel, venv' 2> /dev/null; then
    echo "skip pip_install: $PYTHON lacks setuptools, wheel or venv (Debian: python3-setuptools python3-wheel python3-venv; ./make.sh deps)"
else
    copy_tree "$T/src"
    if (cd "$T/src" && "$PYTHON" -m pip install -q --no-build-isolation --no-index --target "$T/site" . > "$T/pip.log" 2>&1); then
        pass pip_install_target
        expect pip_target_imports 0 "^$VERSION $T/site/gpuyield/__init__.py\$" \
            bash -c "cd / && PYTHONPATH='$T/site' '$PYTHON' -c 'import gpuyield; print(gpuyield.__version__, gpuyield.__file__)'"
        expect pip_target_extension_works 0 "^/gpuyield-$(id -u)-x\$" \
            bash -c "cd / && PYTHONPATH='$T/site' '$PYTHON' -c 'import gpuyield; print(gpuyield.segment_name(\"x\"))'"
        # make.sh builds the extension for pip: the protocol alone, exporting the module init alone.
        check pip_extension_exports_only_its_init test \
            "$(nm -D --defined-only "$T"/site/gpuyield/_gpuyield*.so | awk '{print $3}')" = PyInit__gpuyield
    else
        fail pip_install_target "$(tail -n 20 "$T/pip.log")"
    fi

    # A fresh venv (of $PYTHON, seeing its setuptools and wheel): pip install . gives the whole tool.
    V=$T/venv
    "$PYTHON" -m venv --system-site-packages "$V"
    if (cd "$T/src" && "$V/bin/python" -m pip install -q --no-build-isolation --no-index . > "$T/pip-venv.log" 2>&1); then
        pass pip_install_venv
        SITE=$("$V/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')
        expect pip_venv_imports 0 "^$VERSION $SITE/gpuyield/__init__.py\$" \
            bash -c "cd / && '$V/bin/python' -c 'import gpuyield; print(gpuyield.__version__, gpuyield.__file__)'"
        HOOK=$(cd / && "$V/bin/python" -m gpuyield hook-path)
        check pip_venv_hook_path_in_the_package test "$HOOK" = "$SITE/gpuyield/lib/libgpuyield.so"
        expect pip_venv_hook_path_function 0 "^$HOOK\$" bash -c "cd / && '$V/bin/python' -c 'import gpuyield; print(gpuyield.hook_path())'"
        check pip_venv_hook_is_a_shared_object bash -c "readelf -h '$HOOK' | grep -q 'Type: *DYN'"
        check pip_venv_hook_exports_cuLaunchKernel bash -c "nm -D --defined-only '$HOOK' | grep -qw cuLaunchKernel"
        for lib in libgeek.so libcuinterpose.so libcuinterpose_sync.so libcuinterpose_event.so; do
            check "pip_venv_has_$lib" test -f "$SITE/gpuyield/lib/$lib"
        done
        # LD_PRELOAD=$(python3 -m gpuyield hook-path) loads it (a process without GPUYIELD_SHM passes through).
        check pip_venv_hook_preloads bash -c "env -u GPUYIELD_SHM LD_PRELOAD=\"\$(cd / && '$V/bin/python' -m gpuyield hook-path)\" cat /proc/self/maps | grep -q '$HOOK'"
        expect pip_venv_expcontroller_help 0 "^usage: expcontroller" "$V/bin/expcontroller" --help
        expect pip_venv_run_exp_help 0 "^usage: run_exp" "$V/bin/run_exp" --help
        for tool in expcontroller run_exp nsight-parser; do
            expect "pip_venv_${tool}_version" 0 "^$tool \(gpuyield\) $VERSION\$" "$V/bin/$tool" --version
        done
        # run_exp --simulate as installed: the stand-in, the fake driver and the hook from the package.
        mkdir -p "$T/sim"
        "$PYTHON" tests/run_exp/make_config.py "$T/sim/sim.json" --image "$ROOT/exp_configs/images/street.png" \
            --out-dir "$T/sim/out" --set exp_dur=1 --set models.0.control.control=true \
            --set models.1.control.control=true --set models.1.sleep_time=0.1
        expect pip_venv_simulate_dry_run_uses_the_package 0 "LD_LIBRARY_PATH=$SITE/gpuyield/fakecuda" \
            env PATH="$ROOT/tests/run_exp/bin:$PATH" FAKE_GPUS=0 "$V/bin/run_exp" -f "$T/sim/sim.json" --simulate --dry-run
        expect pip_venv_run_exp_simulate 0 "^SIMULATED figures" \
            env PATH="$ROOT/tests/run_exp/bin:$PATH" FAKE_GPUS=0 "$V/bin/run_exp" -f "$T/sim/sim.json" --simulate --min-jobs 3
        check pip_venv_simulate_wrote_csv test -s "$T/sim/out/model_B.csv"
        # Not simulated: the workers run under the venv's interpreter, importing the package from it.
        expect pip_venv_run_exp_workers_use_the_venv 0 "command: $V/bin/python3? -m gpuyield.worker.*PYTHONPATH=$SITE" \
            bash -c "env -u GPUYIELD_PYTHON PATH='$ROOT/tests/run_exp/bin:$PATH' '$V/bin/run_exp' -f '$T/sim/sim.json' --dry-run | tr '\n' ' '"
    else
        fail pip_install_venv "$(tail -n 20 "$T/pip-venv.log")"
    fi
    # A plain venv (no system site-packages), offline: it builds, or the backend's one line says
    # what to install (Debian's venv has setuptools without wheel).
    "$PYTHON" -m venv "$T/plain"
    out=$(cd "$T/src" && "$T/plain/bin/python" -m pip install --no-build-isolation --no-index . 2>&1); rc=$?
    if [ "$rc" -eq 0 ]; then
        expect pip_plain_venv_builds 0 "^$VERSION\$" bash -c "cd / && '$T/plain/bin/python' -c 'import gpuyield; print(gpuyield.__version__)'"
    elif [ "$(grep -c "gpuyield: cannot build: $T/plain/bin/python" <<< "$out")" -eq 1 ]; then
        pass pip_plain_venv_says_what_to_install
    else
        fail pip_plain_venv_says_what_to_install "exit $rc: $(tail -n 20 <<< "$out")"
    fi

    if (cd "$T/src" && "$V/bin/python" -m pip install -q --no-build-isolation --no-index -e . > "$T/pip-e.log" 2>&1); then
        pass pip_install_editable
        expect pip_editable_imports_the_tree 0 "^$VERSION $T/src/pyext/gpuyield/__init__.py\$" \
            bash -c "cd / && '$V/bin/python' -c 'import gpuyield; print(gpuyield.__version__, gpuyield.__file__)'"
        expect pip_editable_hook_path 0 "^$T/src/pyext/gpuyield/lib/libgpuyield.so\$" \
            bash -c "cd / && '$V/bin/python' -m gpuyield hook-path"
    else
        fail pip_install_editable "$(tail -n 20 "$T/pip-e.log")"
    fi
fi

# make install into a DESTDIR: tools, libraries, header, pkg-config file, the Python package.
if make -s install PREFIX=/opt/gy DESTDIR="$T/dest" > "$T/install.log" 2>&1; then
    pass make_install
    D=$T/dest/opt/gy
    for f in bin/expcontroller bin/run_exp bin/nsight-parser bin/gpuyield-standin lib/libgpuyield.so lib/libgeek.so \
             lib/libcuinterpose.so lib/libgycontrol.a include/gpuyield/gpuyield.h include/gpuyield/segment_layout.h include/gpuyield/guarded_layout.h include/gpuyield/policies.h \
             lib/pkgconfig/gpuyield.pc lib/gpuyield/python/gpuyield/__init__.py lib/gpuyield/fakecuda/libcuda.so.1 \
             share/doc/gpuyield/LICENSE; do
        check "install_has_$f" test -e "$D/$f"
    done
    expect install_tool_runs 0 "^expcontroller \(gpuyield\) $VERSION\$" "$D/bin/expcontroller" --version
    expect install_pkg_config 0 "^-I/opt/gy/include/gpuyield -L/opt/gy/lib -lgycontrol -pthread *\$" \
        env PKG_CONFIG_PATH="$D/lib/pkgconfig" pkg-config --cflags --libs gpuyield
    expect install_pkg_config_version 0 "^$VERSION\$" env PKG_CONFIG_PATH="$D/lib/pkgconfig" pkg-config --modversion gpuyield
    # A program built against the installed header and library (DESTDIR: pkg-config's sysroot).
    # It uses the public API end to end (create, register, a job, status, remove): the installed
    # headers stand alone, without the internal ones beside the code.
    cat > "$T/use.c" <<'EOC'
#include "gpuyield.h"
#include <stdio.h>
#include <unistd.h>
int main(void)
{
    gy_shm shm;
    gy_job job;
    gy_err err;
    static struct gy_status st;
    char tag[32];
    snprintf(tag, sizeof tag, "test-use-%d", (int)getpid());
    if (gy_create(tag, 0, &shm, &err) || gy_register(&shm, 1, &err) || gy_begin(&shm, 1, &job, &err) ||
        gy_status_read(&shm, &st, &err) || gy_job_exit(&shm, &job, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%s %u %d\n", gy_version(), st.jobs[1], gy_launch_allowed(&shm, 0));
    gy_close(&shm);
    return gy_remove(tag, &err) != 0;
}
EOC
    expect install_header_and_library_link 0 "^$VERSION 1 1\$" bash -c \
        "gcc -std=c11 -Wall -Wextra -Werror '$T/use.c' \$(PKG_CONFIG_PATH='$D/lib/pkgconfig' PKG_CONFIG_SYSROOT_DIR='$T/dest' pkg-config --cflags --libs gpuyield) -o '$T/use' && '$T/use'"
    expect install_run_exp_finds_package 0 "PYTHONPATH=$D/lib/gpuyield/python" \
        "$D/bin/run_exp" -f exp_configs/input_control.json --dry-run
    # The fake driver is installed too: run_exp --simulate works from PREFIX (issue 28).
    expect install_run_exp_simulate_finds_fake_driver 0 "LD_LIBRARY_PATH=$D/lib/gpuyield/fakecuda" \
        env PATH="$ROOT/tests/run_exp/bin:$PATH" FAKE_GPUS=0 "$D/bin/run_exp" -f exp_configs/input_control.json --simulate --dry-run
    expect install_hook_path 0 "^$D/lib/libgpuyield.so\$" \
        bash -c "cd / && PYTHONPATH='$D/lib/gpuyield/python' '$PYTHON' -m gpuyield hook-path"
    expect install_bad_prefix 2 "PREFIX must be an absolute path" make -s install PREFIX=relative DESTDIR="$T/dest2"
    check install_bad_prefix_wrote_nothing test ! -e "$T/dest2"
else
    fail make_install "$(tail -n 20 "$T/install.log")"
fi

# deploy/: valid YAML and the fields each example needs, one metrics port, and the Dockerfile
# (parsed: docker cannot run here); the checker fails on a broken copy.
if ! "$PYTHON" -c 'import yaml' 2> /dev/null; then
    echo "skip deploy_manifests: $PYTHON has no yaml module (Debian: python3-yaml; ./make.sh deps)"
else
    run_checker() { "$PYTHON" tests/deploy/check_manifests.py "$1" > "$T/manifests.out" 2>&1; local rc=$?; cat "$T/manifests.out"; return $rc; }
    if run_checker deploy; then pass deploy_manifests; else fail deploy_manifests; fi
    cp -r deploy "$T/broken"
    sed -i '/shareProcessNamespace/d' "$T/broken/k8s/pod.yaml"
    sed -i '/LD_PRELOAD/d' "$T/broken/docker-compose.yml"
    sed -i 's/containerPort: 9745/containerPort: 9400/' "$T/broken/k8s/pod.yaml"
    # The Dockerfile: another port, no ./make.sh, no pip install; and no .dockerignore beside the copy.
    sed -i -e 's/^EXPOSE 9745/EXPOSE 9400/' -e 's|RUN ./make.sh && |RUN |' -e '/pip install/d' "$T/broken/Dockerfile"
    run_checker "$T/broken" > /dev/null
    check deploy_checker_catches_missing_pid_sharing grep -q "^FAIL pod.yaml/.*_shares_pids" "$T/manifests.out"
    check deploy_checker_catches_missing_preload grep -q "^FAIL compose_.*_preloads_the_hook" "$T/manifests.out"
    check deploy_checker_catches_two_metrics_ports grep -q "^FAIL manifests_one_metrics_port" "$T/manifests.out"
    check deploy_checker_catches_dockerfile_port grep -q "^FAIL dockerfile_exposes_the_metrics_port" "$T/manifests.out"
    check deploy_checker_catches_dockerfile_without_build grep -q "^FAIL dockerfile_runs_the_build" "$T/manifests.out"
    check deploy_checker_catches_dockerfile_without_package grep -q "^FAIL dockerfile_installs_the_python_package" "$T/manifests.out"
    check deploy_checker_catches_missing_dockerignore grep -q "^FAIL dockerignore_keeps_build_out" "$T/manifests.out"
fi
check deployment_page_linked_from_readme grep -q "docs/deployment.md" README.md
finish
