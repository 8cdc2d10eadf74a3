#!/bin/sh
# The systemd units in deploy/systemd (issue 15) pass `systemd-analyze verify` with no
# message at all (it exits 0 on unknown keys and bad values, so any output fails here), with
# ExecStart pointed at this build's binaries (verify checks that they exist and run). The
# test shows it would catch a mistake: a misspelled key and a bad value each make verify
# speak. gpudiffd.service keeps its sandbox: DynamicUser, ProtectSystem=strict,
# StateDirectory, no capabilities, and no --allow-root (gpudiffd refuses root without it,
# tests/integration/server_hostile.sh).
. ./tests/integration/env.sh
command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed (systemd)"

mkdir "$TMP/units"
for u in gpudiffd.service gpudiff-agent.service gpudiff-agent.path gpudiff-agent-serve.service; do
    sed "s|/usr/local/bin/|$GD_BUILDDIR/|g" "$GD_SRCDIR/deploy/systemd/$u" >"$TMP/units/$u"
done
verify() {
    (cd "$TMP/units" && systemd-analyze verify --man=no "$@") >"$TMP/verify.txt" 2>&1
    rc=$?
    [ "$rc" = 0 ] && [ ! -s "$TMP/verify.txt" ]
}
verify ./gpudiffd.service ./gpudiff-agent.service ./gpudiff-agent.path \
    ./gpudiff-agent-serve.service || fail "systemd-analyze verify: $(cat "$TMP/verify.txt")"
echo "ok: systemd-analyze verify finds nothing to say of the four units"

sed 's/^ProtectHome=yes/ProtecHome=yes/' "$TMP/units/gpudiffd.service" >"$TMP/units/typo.service"
! verify ./typo.service || fail "verify did not see a misspelled key"
sed 's/^ProtectSystem=strict/ProtectSystem=strickt/' "$TMP/units/gpudiffd.service" \
    >"$TMP/units/value.service"
! verify ./value.service || fail "verify did not see a bad value"
echo "ok: a misspelled key and a bad value are caught"

u="$GD_SRCDIR/deploy/systemd/gpudiffd.service"
for want in '^DynamicUser=yes$' '^ProtectSystem=strict$' '^StateDirectory=gpudiff$' \
    '^CapabilityBoundingSet=$' '^NoNewPrivileges=yes$' '^PrivateTmp=yes$'; do
    grep -q "$want" "$u" || fail "gpudiffd.service lacks $want"
done
! grep -q 'allow-root' "$u" || fail "gpudiffd.service runs with --allow-root"
grep -q '^User=gpudiff-agent$' "$GD_SRCDIR/deploy/systemd/gpudiff-agent.service" ||
    fail "gpudiff-agent.service does not run as its own user"
echo "ok: the units keep their sandbox and never run as root"

# jobagt: `gpudiff-agent serve` as a service: its own user, its cache and state folders, the
# token from the EnvironmentFile (never on the command line), SIGTERM to serve alone
u="$GD_SRCDIR/deploy/systemd/gpudiff-agent-serve.service"
for want in '^User=gpudiff-agent$' '^CacheDirectory=gpudiff-agent$' \
    '^StateDirectory=gpudiff-agent$' '^EnvironmentFile=/etc/gpudiff/agent.env$' \
    '^KillMode=mixed$' '^ProtectSystem=strict$' '^NoNewPrivileges=yes$' '^CapabilityBoundingSet=$' \
    '^ExecStart=/usr/local/bin/gpudiff-agent serve '; do
    grep -q "$want" "$u" || fail "gpudiff-agent-serve.service lacks $want"
done
! grep -q -- '--token' "$u" || fail "gpudiff-agent-serve.service puts the token on the command line"
echo "ok: gpudiff-agent-serve.service runs serve as its own user, the token from its environment file"
