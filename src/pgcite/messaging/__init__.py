"""Where teams ask in their chat: Slack, over its Events API at `/slack/events` on `pgcite serve`
(slack.py, http.py) or over Socket Mode for `pgcite slack` (socket_mode.py), and Discord, over its
interactions at `/discord/interactions` (discord_bot.py, discord_http.py). Imports the core and
below; the server mounts it."""
