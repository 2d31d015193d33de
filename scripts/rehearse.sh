#!/usr/bin/env bash
# The main job: ansible-playbook eagle3.trn2.site on the default (rehearsal) inventory, run from the
# collection built from this checkout and installed into .ansible/installed (as an ops team installs it),
# after set-up. Results go to results/ here. Extra arguments go to ansible-playbook,
# e.g. `scripts/rehearse.sh -e eagle3_run_id=demo`.
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
eagle3_venv requirements.txt
eagle3_activate
eagle3_collection_install "$EAGLE3_ROOT/.ansible/installed"
export ANSIBLE_COLLECTIONS_PATH="$EAGLE3_ROOT/.ansible/installed"
export EAGLE3_RESULTS_DIR="${EAGLE3_RESULTS_DIR:-$EAGLE3_ROOT/results}"
exec ansible-playbook eagle3.trn2.site "$@"
