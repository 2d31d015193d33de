#!/usr/bin/env bash
# The whole test suite: static checks, unit tests, then the molecule scenarios on real hosts.
#   scripts/test.sh              everything
#   scripts/test.sh static       lint, argument_specs, syntax, pytest only
#   scripts/test.sh SCENARIO...  only those molecule scenarios (after the static checks)
source "$(dirname "$0")/env.sh"
eagle3_apt_prereqs
# chromium (optional): the report test opens report.html headless and keeps a screenshot in artifacts/.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ]; then
    eagle3_log "apt-get install chromium (report screenshot test)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } \
      || eagle3_log "chromium could not be installed: the screenshot part of the report test is skipped"
  else
    eagle3_log "chromium missing and not root: the screenshot part of the report test is skipped"
  fi
fi
eagle3_venv requirements-dev.txt
eagle3_activate

ARTIFACTS="${EAGLE3_ARTIFACTS:-$EAGLE3_ROOT/artifacts}"
mkdir -p "$ARTIFACTS"
SCENARIOS=(ec2 neuron default)
[ "$#" -gt 0 ] && SCENARIOS=("$@")
[ "${1:-}" = static ] && SCENARIOS=()

start=$(date +%s)
eagle3_log "yamllint --strict"
yamllint --strict .
eagle3_log "ansible-lint (production profile)"
ansible-lint --offline -q
eagle3_log "argument_specs == defaults"
python scripts/check_argspecs.py roles
eagle3_log "syntax check"
ansible-playbook --syntax-check site.yml eagle3.trn2.site eagle3.trn2.teardown >/dev/null
eagle3_log "pytest (plugins, scripts)"
pytest -q -p no:cacheprovider tests --durations=15

if [ "${#SCENARIOS[@]}" -gt 0 ]; then
  # The scenarios run the collection as an ops team installs it: built from this checkout, installed
  # into a fresh path (molecule.yml and the tests' own ansible-playbook runs use EAGLE3_COLLECTIONS).
  EAGLE3_COLLECTIONS="$(mktemp -d "${TMPDIR:-/tmp}/eagle3-collections.XXXXXX")"
  export EAGLE3_COLLECTIONS
  trap 'rm -rf "$EAGLE3_COLLECTIONS"' EXIT
  eagle3_collection_install "$EAGLE3_COLLECTIONS"
fi
for scenario in "${SCENARIOS[@]}"; do
  eagle3_log "molecule test -s $scenario"
  t0=$(date +%s)
  molecule test -s "$scenario" 2>&1 | tee "$ARTIFACTS/molecule-$scenario.log"
  eagle3_log "molecule $scenario: $(( $(date +%s) - t0 )) s"
done
eagle3_log "all tests passed in $(( $(date +%s) - start )) s"
