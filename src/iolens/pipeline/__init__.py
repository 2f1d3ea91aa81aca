"""The pipeline: read → diagnose → render, one path for every consumer (the CLI, a notebook, an agent's server).
Its functions are `iolens`'s own (`iolens.open`, `iolens.diagnose`, ...):

    log = iolens.open("run.darshan")      # a Darshan log, a Recorder folder, a DFTracer trace (file or folder),
                                          # or a folder/list of one job's logs
    insights = iolens.diagnose(log)       # [dict], most severe first, as `iolens diagnose --json` prints them
    iolens.report(log, "run.html")        # the explorer page, with the diagnosis computed here
    iolens.compare("base.darshan", "tuned.darshan")
    iolens.describe_jobs(["run/"])        # what `iolens jobs --json` prints
    iolens.fleet_build(["logs/"], "store"); iolens.fleet_report("store", "fleet.html")
    iolens.tune(["mpiexec", "-n", "8", "./app"], budget=12)
    iolens.anonymize(["run.darshan"], "shared/", key_file="site.key")   # the logs, to share (docs/anonymize.md)

Every log `open` returns satisfies the Log contract (model/contract.py); nothing here or below asks which kind of
log it holds. A log assembled from several processes' logs (`provenance.processes`: a job) is judged step by
step, each finding naming its step and processes; any other log is one step. The views render what this layer
computed: no view runs the diagnosis.

One module per stage, so that a command loads only what it runs (`iolens info` neither the diagnosis nor the
pages): read.py (open, summary, describe_jobs), judge.py (diagnose, diagnose_json, page_insights, by_step,
as_thresholds), render.py (report, export, compare, compare_page), fleet.py (fleet_build, fleet_report,
store_tokens), tune.py (tune), anonymize.py (anonymize, and the anonymised copies `export --anonymize` reads).
"""
# name -> the module of this package that defines it (the `iolens` package exposes them on first use)
API = {"open": "read", "summary": "read", "describe_jobs": "read",
       "as_thresholds": "judge", "by_step": "judge", "diagnose": "judge", "diagnose_json": "judge",
       "page_insights": "judge",
       "report": "render", "export": "render", "compare": "render", "compare_page": "render",
       "fleet_build": "fleet", "fleet_report": "fleet", "anonymize": "anonymize"}
# and tune.py's `tune`: `iolens.tune` is the tune package, which called is that function
