"""Log a run directory to MLflow (the optional ``[mlflow]`` extra; imported lazily).

What goes where (docs/guide.md#mlflow):

- params: the resolved spec, flattened (``data.name``, ``model.widths`` = "16,64", ...);
- metrics: every ``Metric`` event of events.jsonl (per-epoch ``train_loss``,
  ``train_accuracy``, ``kernel_drift``) as ``<name>/<cell>`` with the event's step, and
  each number of summary.json as ``summary/<path>``;
- artifacts: every CSV, summary.json, spec.toml, env.json, reproduce.json and figures/;
- tags: status, experiment, data set, each failed guard (``guard/<section>/<guard>``)
  and each checklist verdict (``claim/<n>/<data set>``).

A reproduce folder becomes a parent run (its summary, checklist and reproduce.json)
with one nested run per part. The MLflow run id is written back into summary.json
(``"mlflow": {"run_id", "experiment_id", "tracking_uri"}``).
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import time
from pathlib import Path
from typing import Any

from engine.errors import ConfigError, EngineError, needs_extra

EXPERIMENT = "malleability"
_BAD = re.compile(r"[^\w\-. /]")
_FILES = ("summary.json", "spec.toml", "env.json", "reproduce.json")
_MAX_TAG = 5000


def _key(text: str) -> str:
    """An MLflow metric/param/tag key (alphanumerics, _ - . space /; ≤ 250 chars)."""
    return posixpath.normpath(_BAD.sub("_", text)).strip("/")[:250]


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts → {"a.b": leaf}; lists of scalars joined by commas."""
    out: dict[str, Any] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
    elif isinstance(d, list) and all(not isinstance(x, (dict, list)) for x in d):
        out[prefix[:-1]] = ",".join(str(x) for x in d)
    else:
        out[prefix[:-1]] = d
    return out


def _numbers(d: Any, prefix: str = "summary") -> dict[str, float]:
    """Every finite number (not bool) of a summary, by its "/"-joined path."""
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_numbers(v, f"{prefix}/{k}"))
    elif isinstance(d, (int, float)) and not isinstance(d, bool) and d == d:
        if abs(d) != float("inf"):
            out[_key(prefix)] = float(d)
    return out


def _tags(summary: dict[str, Any]) -> dict[str, str]:
    """Status, experiment, data set, failed guards and checklist verdicts as tags."""
    tags: dict[str, str] = {
        k: str(summary[k]) for k in ("status", "experiment", "dataset") if k in summary
    }
    for section, val in summary.items():
        if isinstance(val, dict) and isinstance(val.get("failed_guards"), dict):
            for guard, where in val["failed_guards"].items():
                text = (
                    json.dumps(where, ensure_ascii=False) if not isinstance(where, str) else where
                )
                tags[_key(f"guard/{section}/{guard}")] = text[:_MAX_TAG]
    for item in summary.get("checklist") or []:
        if isinstance(item, dict) and "claim" in item:
            name = f"claim/{item['claim']}" + (f"/{item['dataset']}" if item.get("dataset") else "")
            tags[_key(name)] = str(item.get("verdict", ""))
    return tags


def _read_json(path: Path) -> dict[str, Any]:
    try:
        v = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return v if isinstance(v, dict) else {}


def _metrics(run_dir: Path) -> list[tuple[str, float, int]]:
    """(key, value, step) of every Metric event in events.jsonl."""
    out: list[tuple[str, float, int]] = []
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return out
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # a torn last line of an interrupted run
            if isinstance(ev, dict) and ev.get("kind") == "Metric":
                key = _key(f"{ev['name']}/{ev.get('cell', '')}".rstrip("/"))
                out.append((key, float(ev["value"]), int(ev.get("step", 0))))
    return out


class MlflowTracker:
    """Logs run directories to the MLflow tracking server or store at ``uri``."""

    kind = "mlflow"

    def __init__(self, uri: str | None = None, experiment: str = EXPERIMENT) -> None:
        try:
            import mlflow  # noqa: F401
            from mlflow.tracking import MlflowClient
        except ImportError:
            raise ConfigError(
                "track", "mlflow", needs_extra("mlflow", "tracking with MLflow")
            ) from None
        import mlflow

        self.uri = uri or mlflow.get_tracking_uri()
        # MLflow retries a server that stops answering for minutes, printing nothing; a
        # tracker failure costs no run (log_run: one line), so give up within a minute
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
        if self.uri.startswith("file:") or "://" not in self.uri:
            # MLflow ≥ 3.7 refuses its file store unless opted in; asking for a file: URI
            # is that choice (an explicit MLFLOW_ALLOW_FILE_STORE=false still wins).
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        try:
            self.client = MlflowClient(tracking_uri=self.uri)
            self.experiment = experiment
            self.experiment_id = self._experiment_id()
        except Exception as e:  # noqa: BLE001 - a bad URI or store: one line, before any work
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ConfigError(
                "tracking-uri", self.uri, f"an MLflow tracking URI MLflow accepts ({msg})"
            ) from None

    def _experiment_id(self) -> str:
        exp = self.client.get_experiment_by_name(self.experiment)
        return exp.experiment_id if exp else self.client.create_experiment(self.experiment)

    def log_run(self, run_dir: object) -> str:
        """Log ``run_dir`` (a run or a reproduce folder); returns the MLflow run id and
        records it in the directory's summary.json."""
        path = Path(str(run_dir))
        try:
            exp_id = self.experiment_id
            run_id = self._log(path, exp_id, parent=None)
        except EngineError:
            raise
        except Exception as e:  # noqa: BLE001 - a tracker failure is one line, the run is kept
            raise EngineError(f"mlflow: could not log {path} to {self.uri} ({e})") from None
        summary = _read_json(path / "summary.json")
        summary["mlflow"] = {"run_id": run_id, "experiment_id": exp_id, "tracking_uri": self.uri}
        from engine.run.paths import atomic_write

        atomic_write(path / "summary.json", json.dumps(summary, indent=2) + "\n")
        return run_id

    def _log(self, path: Path, exp_id: str, parent: str | None) -> str:
        from mlflow.entities import Metric, Param

        summary = {k: v for k, v in _read_json(path / "summary.json").items() if k != "mlflow"}
        tags = {"mlflow.runName": path.name, "run_dir": str(path.resolve()), **_tags(summary)}
        if parent is not None:
            tags["mlflow.parentRunId"] = parent
        run = self.client.create_run(exp_id, tags=tags)
        rid = run.info.run_id
        params = self._params(path)
        plist = [Param(_key(k), str(v)[:6000]) for k, v in params.items()]
        for i in range(0, len(plist), 100):
            self.client.log_batch(rid, params=plist[i : i + 100])
        now = int(time.time() * 1000)
        mets = [Metric(k, v, now, s) for k, v, s in _metrics(path)]
        mets += [Metric(k, v, now, 0) for k, v in _numbers(summary).items()]
        for i in range(0, len(mets), 1000):
            self.client.log_batch(rid, metrics=mets[i : i + 1000])
        for f in sorted(path.glob("*.csv")) + [path / n for n in _FILES]:
            if f.is_file():
                self.client.log_artifact(rid, str(f))
        if (path / "figures").is_dir():
            self.client.log_artifacts(rid, str(path / "figures"), "figures")
        meta = _read_json(path / "reproduce.json")
        for part in meta.get("parts") or []:
            sub = path / str(part.get("key", ""))
            if isinstance(part, dict) and (sub / "spec.toml").is_file():
                self._log(sub, exp_id, parent=rid)
        status = "FINISHED" if summary.get("status", "finished") == "finished" else "FAILED"
        self.client.set_terminated(rid, status)
        return rid

    @staticmethod
    def _params(path: Path) -> dict[str, Any]:
        if (path / "spec.toml").is_file():
            from engine.run.validate import read_spec

            return flatten(read_spec(path / "spec.toml").to_dict())
        meta = _read_json(path / "reproduce.json")
        return flatten({k: meta[k] for k in ("tables", "quick") if k in meta})
