"""The project's settings and the preflight's checks before any host changes: settings_schema.yml (one description per
eagle3_* setting) with its validator (schema.py, shared with the result files), the checks of every setting and role
input (settings.py) with the settings a task sees resolved for them (task_view.py, the lookups' work), an operator's
mapping merged over the project's (layers.py), and the checks of the controller itself and of its command line
(controller_checks.py)."""
