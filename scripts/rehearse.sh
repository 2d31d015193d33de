#!/usr/bin/env bash
# The main job: `ansible-playbook site.yml` on the default (rehearsal) inventory, after set-up.
# Extra arguments go to ansible-playbook, e.g. `scripts/rehearse.sh -e eagle3_run_id=demo`.
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
eagle3_venv requirements.txt
eagle3_activate
exec ansible-playbook site.yml "$@"
