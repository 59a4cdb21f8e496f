"""Domain events: what happened in a team (a handoff stored, a task claimed, a workflow failed,
a budget exceeded), recorded to the team's event log and forwarded to EventBridge in AWS.

Not `shared.orchestrator.events`: that package is the log itself and seed 000's
event.publish / event.poll tools; this one decides which domain changes become events, their
schema (`models`), and how they leave (`ports.DomainEventSink`). See docs/events.md.
"""
