"""Where teams ask in their chat: Slack, over its Events API at `/slack/events` on `pgcite serve`
(slack.py, http.py). Imports the core and below; the server mounts it."""
