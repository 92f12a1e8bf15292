"""The default's test (issue 26 item 5): may guarded replace corun as the default under MPS?
    python3 -m bench.gpu.default_decision [--setup guarded] FOLDER [FOLDER ...]
Each FOLDER is a matrix invocation's folder (raw.json or raw.json.xz in it) or a record holding such
folders one level down. Every invocation's cells are pooled by cell (HP kind, LP kind, load) and
analysed together, invocations then rounds resampled (bench.gpu.matrix.analyze), and each cell is
judged on the two tests the README states:
  HP: the setup meets the HP target wherever corun meets it (p50 <= 1.03, its interval <= 1.06,
      p99 <= 1.10 of the plain alone);
  LP: the setup's LP ratio minus corun's, paired by round, is not under -0.02 beyond its interval
      (the interval's upper bound at -0.02 or above).
Beside them, reported: the HP p99's difference to corun's paired by round with its interval, and
of the HP misses, those where the missed statistic's (p50, p99) paired difference lies wholly above
0 (the p99 of a few jobs moved by up to 0.5 between two setups running stop in the same rounds on
2026-12-07). --hp-test paired judges the HP by it instead: a miss where corun met the target fails
only where the candidate is so shown worse than corun (a test proposed to issue 26's owner, not the
README's).
Then the matrix's cells (4 HP kinds x 5 LP kinds at 25 %, each HP kind beside ResNet-50 training at
60 %) that no folder covers, and the builds (each invocation's commit) whose controller, hooks,
service or pyext differ, by git: records of two rules are not one verdict. The last line is the
verdict: passes (every matrix cell covered, none failed, one rule), fails (the cells named),
incomplete (the cells missing), or mixed (invocations of more than one rule)."""
import argparse
import os
import subprocess
import sys

from . import matrix, raw_record
from .matrix_report import lp_shown_under


class DecisionError(Exception):
    pass


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# where the rule and what carries it out live: two builds that differ here are two rules
RULE_PATHS = ("controller", "hooks", "service", "pyext")


def rule_differences(commits, repo):
    """(differing, unknown, rules): [(a, b, files)] for each build b whose RULE_PATHS differ from the
    first build a's, the builds git cannot compare (not in REPO's history), and how many rules the
    compared builds hold."""
    def git(*words):
        try:
            return subprocess.run(["git", "-C", repo, *words], capture_output=True, text=True)
        except OSError:  # no git here: nothing can be compared
            return subprocess.CompletedProcess(words, 127, "", "")
    ordered = sorted(commits)
    differing, unknown, rules = [], [], ordered[:1]  # rules: one build of each rule seen
    for c in ordered[1:]:
        r = git("diff", "--name-only", ordered[0], c, "--", *RULE_PATHS)
        if r.returncode != 0:
            unknown.append(c)
        elif r.stdout.split():
            differing.append((ordered[0], c, r.stdout.split()))
            if all(git("diff", "--quiet", rule, c, "--", *RULE_PATHS).returncode == 1 for rule in rules[1:]):
                rules.append(c)
    if ordered and git("cat-file", "-e", f"{ordered[0]}^{{commit}}").returncode != 0:
        unknown.insert(0, ordered[0])
    return differing, unknown, len(rules)


HP_TESTS = ("point", "paired")


def shown_worse(cand):
    """The HP statistics (p50, p99) on which CAND missed the target and its difference to corun's,
    paired by round, lies wholly above 0: the miss is CAND's, not the rounds' chance."""
    return [q for q in matrix.hp_target_missed(cand) if (ci := cand.get(f"hp_{q}_minus_corun_ci")) and ci[0] > 0]


def hp_miss(cell, setup):
    """Whether SETUP missed the HP target in CELL where corun, in the same rounds, met it."""
    corun, cand = cell["setups"].get("corun") or {}, cell["setups"].get(setup) or {}
    return bool(corun.get("meets_hp_target") and cand.get("hp_jobs") and not cand.get("meets_hp_target"))


def judge(cell, setup, hp_test="point"):
    """(verdict, why) of one pooled cell: 'pass', 'fail' or 'open' (a test it cannot make). HP_TEST
    'point': the README's test (the target met wherever corun met it); 'paired': such a miss fails
    only where the candidate is shown worse than corun on the statistic it missed (shown_worse)."""
    corun, cand = cell["setups"].get("corun"), cell["setups"].get(setup)
    if not corun or not cand or not corun.get("hp_jobs") or not cand.get("hp_jobs"):
        return "open", f"no {'corun' if not corun or not corun.get('hp_jobs') else setup} in the same rounds"
    why = []
    if hp_miss(cell, setup):
        worse = shown_worse(cand)
        if hp_test == "point":
            why.append("missed the HP target that corun met")
        elif worse:
            why.append(f"missed the HP target that corun met, its {' and '.join(worse)} over corun's "
                       f"beyond the paired interval")
    ci, rounds = cand.get("lp_minus_corun_ci"), cand.get("lp_paired_rounds", 0)
    if lp_shown_under(cand):
        why.append(f"LP under corun's beyond the interval ({cand['lp_minus_corun']:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}])")
    if why:  # a failed test fails the cell whether or not the other could be made
        return "fail", "; ".join(why)
    if not ci or rounds < matrix.LP_PAIRED_ROUNDS_MIN:
        return "open", (f"the LP difference stands on {rounds} paired round(s), under "
                        f"{matrix.LP_PAIRED_ROUNDS_MIN} (rounds where both setups' LPs and lp_alone ran)")
    return "pass", ""


def fmt_hp(row):
    p50, p99 = row.get("hp_p50_ratio") or {}, row.get("hp_p99_ratio") or {}
    if p50.get("value") is None:
        return "-"
    ci = p50.get("ci")
    txt = f"{p50['value']:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")
    txt += " · " + ("-" if p99.get("value") is None else f"{p99['value']:.2f}")
    return txt + ("" if row.get("meets_hp_target") else " ✗")


def beside_setup(raw, setup):
    """RAW with only the cells in which it ran SETUP: corun is judged on the rounds the candidate ran
    in, never pooled with invocations that ran corun alone (a cost or an older rule's cell)."""
    ran = {(s["hp"], s["lp"], s["load"]) for s in raw["segments"] if s["setup"] == setup}
    return dict(raw, segments=[s for s in raw["segments"] if (s["hp"], s["lp"], s["load"]) in ran])


def candidate_raws(folders, setup):
    """The raw records of FOLDERS' invocations, each cut to the cells in which it ran SETUP (none
    that ran it nowhere)."""
    raws = []
    for folder in folders:
        for inv in raw_record.invocation_folders(folder):
            raw = beside_setup(raw_record.load(inv), setup)
            if raw["segments"]:
                raws.append(raw)
    return raws


def first_invocations(raws):
    """RAWS cut so that each cell keeps only the first invocation that ran it (by its start): a cell
    re-run because it failed, pooled, regresses toward its mean, while the passing cells were not
    re-run; judged on its first runs alone the matrix has no such selection."""
    seen, out = set(), []
    for raw in sorted(raws, key=lambda r: r.get("started") or ""):
        cells = {(s["hp"], s["lp"], s["load"]) for s in raw["segments"]} - seen
        seen |= cells
        kept = [s for s in raw["segments"] if (s["hp"], s["lp"], s["load"]) in cells]
        if kept:
            out.append(dict(raw, segments=kept))
    return out


def report(folders, setup, repo=ROOT, hp_test="point"):
    raws = candidate_raws(folders, setup)
    if not raws:
        raise DecisionError(f"no invocation in {', '.join(folders)} ran {setup}: nothing to judge")
    # each cell pooled over the invocations that ran it beside the candidate, invocations then rounds resampled
    m = matrix.analyze(raws)
    runs = {}
    for raw in raws:
        for key in {(s["hp"], s["lp"], s["load"]) for s in raw["segments"]}:
            runs.setdefault(key, []).append(raw)
    lines = [f"| cell | invocations (commits) | corun HP p50 · p99 | {setup} HP p50 · p99 | {setup} LP − corun's "
             f"[paired interval] | {setup} HP p99 − corun's [paired interval] | verdict |", "|---|---|---|---|---|---|---|"]
    verdicts = {}
    cells_by_key = {(c["hp"], c["lp"], c["load"]): c for c in m["cells"]}
    for c in sorted(m["cells"], key=lambda c: (c["hp"], c["load"], c["lp"])):
        key = (c["hp"], c["lp"], c["load"])
        verdict, why = judge(c, setup, hp_test)
        verdicts[key] = (verdict, why)
        cand, corun = c["setups"].get(setup) or {}, c["setups"].get("corun") or {}
        diff, ci = cand.get("lp_minus_corun"), cand.get("lp_minus_corun_ci")
        lp = "-" if diff is None else f"{diff:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
        tail, tail_ci = cand.get("hp_p99_minus_corun"), cand.get("hp_p99_minus_corun_ci")
        tail_txt = "-" if tail is None else f"{tail:+.2f}" + (f" [{tail_ci[0]:+.2f}, {tail_ci[1]:+.2f}]" if tail_ci else "")
        commits = sorted({r["commit"] for r in runs.get(key, [])})
        left_out = [f"{n} {what}" for n, what in ((c.get("alone_overloaded_rounds"), "overloaded"),
                                                    (c.get("unpaired_rounds"), "unpaired")) if n]
        invs = f"{len(runs.get(key, []))} ({', '.join(commits)})" + (
            f", rounds left out: {', '.join(left_out)}" if left_out else "")
        lines.append(f"| {c['hp']} + {c['lp']}, {c['load']} | {invs} | "
                     f"{fmt_hp(corun) if corun else '-'} | {fmt_hp(cand) if cand else '-'} | {lp} | {tail_txt} | "
                     f"{verdict}{': ' + why if why else ''} |")
    hp_misses = [k for k, c in cells_by_key.items() if hp_miss(c, setup)]
    worse = [k for k in hp_misses if shown_worse(cells_by_key[k]["setups"][setup])]
    expected = matrix.cells(matrix.DEFAULT_HP_KINDS, matrix.DEFAULT_LP_KINDS, list(matrix.LOADS), "resnet50train")
    missing = [k for k in expected if k not in verdicts or verdicts[k][0] == "open"]
    failed = [k for k, (v, _) in verdicts.items() if v == "fail"]
    beyond = [k for k in verdicts if k not in expected]
    name = lambda k: f"{k[0]} + {k[1]}, {k[2]}"
    lines.append("")
    lines.append(f"- {setup}: {sum(v == 'pass' for v, _ in verdicts.values())} of {len(verdicts)} cells pass both "
                 f"tests; failed {len(failed)}" + (f" ({'; '.join(map(name, failed))})" if failed else ""))
    if hp_misses:  # the HP test asked as the LP's is
        lines.append(f"- of the {len(hp_misses)} HP miss(es) where corun met the target, the missed statistic's difference "
                     f"to corun's paired by round lies wholly above 0 in {len(worse)}"
                     + (f" ({'; '.join(map(name, worse))})" if worse else "")
                     + (" (reported, not judged: --hp-test paired judges by it)" if hp_test == "point" else ""))
    if any(len(r) > 1 for r in runs.values()):  # some cell pooled over several invocations
        first = [judge(c, setup, hp_test) + ((c["hp"], c["lp"], c["load"]),)
                 for c in matrix.analyze(first_invocations(raws))["cells"]]
        first_failed = [key for v, _, key in first if v == "fail"]
        lines.append(f"- on each cell's first invocation alone (pooling a re-run of a failed cell favours a pass): "
                     f"{sum(v == 'pass' for v, _, _ in first)} of {len(first)} pass, failed {len(first_failed)}"
                     + (f" ({'; '.join(map(name, first_failed))})" if first_failed else "") + " (reported, not judged)")
    lines.append(f"- the matrix's {len(expected)} cells: {len(expected) - len(missing)} judged"
                 + (f"; not yet: {'; '.join(map(name, missing))}" if missing else ""))
    if beyond:
        lines.append(f"- beyond the matrix (judged, counted in the verdict): {'; '.join(map(name, beyond))}")
    differing, unknown, rules = rule_differences({r["commit"] for r in raws}, repo)
    for a, b, files in differing:
        shown = ", ".join(files[:4]) + (f" and {len(files) - 4} more" if len(files) > 4 else "")
        lines.append(f"- builds {a} and {b} differ in {shown}: two rules, not one")
    if unknown:
        lines.append(f"- builds not compared (not in {repo}'s history): {', '.join(unknown)}")
    if differing:
        verdict = f"mixed: invocations of {rules} rules: give one rule's records"
    elif failed:
        verdict = f"fails: {setup} stays opt-in"
    elif missing:
        verdict = f"incomplete: {len(missing)} of the matrix's cells not judged"
    else:
        verdict = f"passes: {setup} may become the default under MPS"
    if hp_test == "paired":
        verdict += " (HP judged paired with corun's: --hp-test paired, not the README's point test)"
    lines.append(f"default test: {verdict}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m bench.gpu.default_decision", description=__doc__.splitlines()[0])
    p.add_argument("--setup", default="guarded", help="the candidate setup, judged against corun (default guarded)")
    p.add_argument("--repo", default=ROOT, help="the git repository whose history compares the builds (this one)")
    p.add_argument("--hp-test", choices=HP_TESTS, default="point",
                   help="point (default, the README's test): the HP target met wherever corun met it; paired: "
                        "such a miss fails only where the missed p50 or p99 is over corun's beyond its interval "
                        "paired by round")
    p.add_argument("folders", nargs="+", metavar="FOLDER")
    args = p.parse_args(argv)
    if args.setup == "corun" or args.setup not in matrix.SETUP:
        p.error(f"--setup {args.setup}: a matrix setup other than corun (e.g. guarded, guarded_auto)")
    try:
        print(report(args.folders, args.setup, args.repo, args.hp_test))
    except (DecisionError, raw_record.RawRecordError) as e:
        print(f"default_decision: {' '.join(str(e).split())}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
