#!/usr/bin/env bash
# The suite's static checks: yamllint, ansible-lint (production profile), the roles' argument_specs against their
# defaults, the playbooks' syntax. scripts/test.sh runs this as one part beside the others (it reads the checkout
# only); run alone it uses the venv scripts/test.sh made (.venv).
source "$(dirname "$0")/env.sh"
eagle3_activate
eagle3_log "yamllint --strict"
yamllint --strict .
eagle3_log "ansible-lint (production profile)"
ansible-lint --offline -q
eagle3_log "generated from the settings schema; argument_specs == defaults"
python scripts/settings_gen.py --check
eagle3_log "syntax check"
ansible-playbook --syntax-check site.yml eagle3.trn2.site eagle3.trn2.teardown >/dev/null
eagle3_log "static checks passed"
