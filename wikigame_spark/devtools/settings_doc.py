"""docs/settings.md from the job specs: every job's flags, YAML keys, defaults and help, as declared.

    python -m wikigame_spark.devtools.settings_doc > docs/settings.md

The settings are declared once (``wikigame_spark.config.setting``); this page is made from them,
and a test checks that the page in the repository is what this prints.
"""

from __future__ import annotations

import dataclasses

from wikigame_spark import jobs
from wikigame_spark.agents.base import registered_options
from wikigame_spark.config import flag_of


def _default(f: dataclasses.Field) -> str:
    value = f.default
    if value in ("", None, ()):
        return "–"
    return f"`{','.join(value) if isinstance(value, tuple) else value}`"


def _rows(cls: type) -> list[str]:
    rows = []
    for f in dataclasses.fields(cls):
        if "help" not in f.metadata:
            continue
        meta = f.metadata
        help_text = meta["help"].replace("|", "\\|")
        if meta.get("choices"):
            help_text += f" (one of {', '.join(f'`{c}`' for c in meta['choices'] if c)})"
        default = "**required**" if meta.get("required") else _default(f)
        rows.append(f"| `{flag_of(cls, f.name)}` | `{f.name}` | {default} | {help_text} |")
    return rows


def page() -> str:
    lines = [
        "# Settings of every job",
        "",
        "Made from the jobs' specs by `python -m wikigame_spark.devtools.settings_doc` (a test checks it is",
        "current). Each setting is a flag and a key of the job's `--config` YAML (default",
        "`conf/<job>.yaml`); flags override the YAML. Every job also takes `--config YAML`, `--verbose`",
        "(Spark's task traces and the fault's traceback) and `--version`. A bad value ends the job before",
        "any work with one `error:` line naming the flag, exit status 2.",
    ]
    for job in jobs.specs():
        name = job.name
        lines += ["", f"## {name}", "", " ".join(job.doc.strip().split("\n\n")[0].split()), ""]
        lines += ["| flag | YAML key | default | what |", "|---|---|---|---|", *_rows(job.settings)]
        if name == "play_games":
            for options, agents in registered_options().items():
                if not dataclasses.fields(options):
                    continue
                lines += ["", f"### Options of `--agent {'`, `'.join(agents)}`", ""]
                lines += ["| flag | YAML key | default | what |", "|---|---|---|---|", *_rows(options)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(page(), end="")
