"""Domain events: what happened in a team (a handoff stored, a task claimed, a workflow failed,
a budget exceeded), recorded to the team's event log and forwarded to EventBridge in AWS.

Not `shared.orchestrator.events`: that package is seed 000's event.publish / event.poll tools
and the log's adapters; this one decides which domain changes become events, their schema
(`models`), how they leave (`ports.DomainEventSink`), and the log's record and row format that
its outbox writes (`log`, `adapters.log_item`, `adapters.sqlite_log_rows`). See docs/events.md.
"""
