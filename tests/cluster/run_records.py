"""Prints the runs of the instance in DAGSTER_HOME as one JSON object per line: its job, tags,
status and, per step, the Celery worker that ran it and when it started and ended. Run with the
cluster venv's python (it reads PostgreSQL through dagster-postgres)."""

import json

from dagster import DagsterEventType, DagsterInstance

STEP_EVENTS = {DagsterEventType.STEP_START: "start", DagsterEventType.STEP_SUCCESS: "end",
               DagsterEventType.STEP_FAILURE: "end"}

with DagsterInstance.get() as instance:
    for record in instance.get_run_records():
        run = record.dagster_run
        steps: dict[str, dict] = {}
        for entry in instance.all_logs(run.run_id):
            event = entry.dagster_event
            if event is None or event.step_key is None:
                continue
            step = steps.setdefault(event.step_key, {})
            if event.event_type in STEP_EVENTS:
                step[STEP_EVENTS[event.event_type]] = entry.timestamp
                step["pid"] = event.pid
            elif event.event_type == DagsterEventType.ENGINE_EVENT and "Celery worker" in (
                    event.engine_event_data.metadata or {}):
                step["worker"] = event.engine_event_data.metadata["Celery worker"].value
        print(json.dumps({"run_id": run.run_id, "job": run.job_name, "tags": dict(run.tags),
                          "status": run.status.value, "steps": steps}))
