# images/test, phase 5: the README's docker line, under runc.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

README=$ROOT/images/README.md

# The words of the one command of images/README.md's "Run it by hand" that starts with "$2 run", split as a POSIX
# shell splits them (continuations, quotes, comments), NUL-terminated: what the test runs is what the README shows.
readme_command() {
  python3 "$ROOT/images/test.d/readme_command.py" "$1" "$2"
}

# The docker line of README $1, checked: each option one the test maps onto runc (anything else is an option it does
# not know the restriction of), the check pod's restrictions all there, the key by name only, this version's image.
# Sets D_UID D_GID D_MEM (bytes) D_KEY (the variable -e passes and --api-key-env names) D_ARGS (after the image).
docker_line() {
  local words i w ro='' caps='' nnp='' n
  readme_command "$1" docker >"$TMP/docker.words" || fail "the README's docker line: none to read"
  mapfile -d '' -t words <"$TMP/docker.words"
  D_UID='' D_GID='' D_MEM='' D_KEY='' D_ARGS=()
  for ((i = 2; i < ${#words[@]}; i++)); do
    w=${words[i]}
    case $w in
      --rm) continue ;;
      --read-only) ro=1 && continue ;;
      --user | --cap-drop | --security-opt | --memory | -e) ;;
      -*) fail "the README's docker line: images/test does not know what $w restricts (teach it, or drop it)" ;;
      *) break ;;
    esac
    i=$((i + 1))
    case $w:${words[i]:-} in
      --user:*) [[ ${words[i]} =~ ^([0-9]+):([0-9]+)$ ]] || fail "the README's docker line: --user ${words[i]}: not UID:GID"
        D_UID=${BASH_REMATCH[1]} D_GID=${BASH_REMATCH[2]} ;;
      --cap-drop:ALL) caps=1 ;;
      --security-opt:no-new-privileges | --security-opt:no-new-privileges:true) nnp=1 ;;
      --memory:*) [[ ${words[i]} =~ ^([0-9]+)m$ ]] || fail "the README's docker line: --memory ${words[i]}: not <n>m"
        D_MEM=$((BASH_REMATCH[1] * 1024 * 1024)) ;;
      -e:*) [[ -z $D_KEY ]] || fail "the README's docker line: more than one -e (the key's alone)"
        [[ ${words[i]} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
          fail "the README's docker line: -e ${words[i]}: not a variable's name alone (a value there is in argv)"
        D_KEY=${words[i]} ;;
      *) fail "the README's docker line: $w ${words[i]:-}: not a restriction images/test maps onto runc" ;;
    esac
  done
  [[ -n $ro ]] || fail "the README's docker line lacks --read-only"
  [[ -n $caps ]] || fail "the README's docker line lacks --cap-drop ALL"
  [[ -n $nnp ]] || fail "the README's docker line lacks --security-opt no-new-privileges"
  [[ $D_UID:$D_GID == 65532:65532 ]] || fail "the README's docker line lacks --user 65532:65532 (the image's user)"
  [[ $D_MEM == "$MEM_LIMIT" ]] || fail "the README's docker line lacks --memory 64m (the check pod's limit)"
  [[ ${words[i]:-} == "ghcr.io/jr2/jr2-probe:$VERSION" ]] ||
    fail "the README's docker line runs ${words[i]:-nothing}, not ghcr.io/jr2/jr2-probe:$VERSION"
  D_ARGS=("${words[@]:i+1}")
  [[ ${D_ARGS[0]:-} == check ]] || fail "the README's docker line does not run check: ${D_ARGS[*]}"
  n=0
  for ((i = 1; i < ${#D_ARGS[@]}; i++)); do
    if [[ ${D_ARGS[i]} == --api-key-env ]]; then
      n=$((n + 1))
      [[ ${D_ARGS[i + 1]:-} == "$D_KEY" && -n $D_KEY ]] ||
        fail "the README's docker line: --api-key-env ${D_ARGS[i + 1]:-} is not the variable -e passes (${D_KEY:-none})"
    fi
  done
  ((n == 1)) || fail "the README's docker line: $n --api-key-env, not one (the key by name, as -e passes it)"
}

# The README's process args with the fake in place of the LAN endpoint ($1: the fake's model): exactly one
# --base-url and one --model, each replaced. Sets R_ARGS.
fake_args() {
  local i n=0
  R_ARGS=("${D_ARGS[@]}")
  for ((i = 0; i < ${#R_ARGS[@]}; i++)); do
    case ${R_ARGS[i]} in
      --base-url) R_ARGS[i + 1]=http://127.0.0.1:$PORT/v1 && n=$((n + 1)) ;;
      --model) R_ARGS[i + 1]=$1 && n=$((n + 10)) ;;
    esac
  done
  ((n == 11)) || fail "the README's docker line: not one --base-url and one --model: ${D_ARGS[*]}"
}

# The words $@ as a JSON array (jq 1.6's --args would take the probe's --flags for its own).
json_words() { python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@"; }

# One run of the image as the docker line says, under runc: the README's args with the fake's model $1, the key
# variable set to $2; its restrictions read off first. Sets rc; the probe's stderr in $TMP/hand.err.
run_by_hand() {
  local start_ms
  fake_args "$1"
  jq --arg env "$D_KEY=$2" --argjson uid "$D_UID" --argjson gid "$D_GID" --argjson mem "$D_MEM" \
    --arg netns "/var/run/netns/$NS" --argjson args "$(json_words "${R_ARGS[@]}")" '
      .process.terminal = false
    | .process.args = ["/jr2-probe"] + $args
    | .process.env = [$env]
    | .process.user = {uid: $uid, gid: $gid}
    | .process.noNewPrivileges = true
    | .process.capabilities = {bounding: [], effective: [], inheritable: [], permitted: [], ambient: []}
    | .root.readonly = true
    | .linux.namespaces = ([.linux.namespaces[] | select(.type != "network")] + [{type: "network", path: $netns}])
    | .linux.resources.memory = {limit: $mem}
    ' "$TMP/config.umoci.json" >"$BUNDLE/config.json"
  check_restrictions "$D_UID" "$D_GID" "$D_MEM"
  start_ms=$(date +%s%3N)
  rc=0
  timeout 60 runc --root "$RUNC_ROOT" run --bundle "$BUNDLE" "$CID" >"$TMP/hand.out" 2>"$TMP/hand.err" </dev/null || rc=$?
  runc --root "$RUNC_ROOT" delete --force "$CID" >/dev/null 2>&1 || true
  say "by hand: jr2-probe ${R_ARGS[*]} ($D_KEY set): exit $rc in $(($(date +%s%3N) - start_ms)) ms; stderr: $(tr '\n' ' ' <"$TMP/hand.err")"
}

phase "the README's docker line under runc"
docker_line "$README"
say "the README's docker line: uid $D_UID, gid $D_GID, memory $D_MEM bytes, key by name $D_KEY; args: ${D_ARGS[*]}"
# The fake's `ok` model, as the README's line runs it: exit 0 and the pass line. The namespace has nothing but its
# loopback, so the README's 10.0.0.5 could not be reached even if a substitution were missed.
run_by_hand ok not-a-real-key
((rc == 0)) || fail "by hand: exit $rc; stderr: $(cat "$TMP/hand.err")"
grep -Eqx 'provider: ok completed a tool call \([0-9]+ ms\)' "$TMP/hand.err" ||
  fail "by hand: no pass line on stderr: $(cat "$TMP/hand.err")"
# The key that -e passes reaches the provider as the bearer: the fake's `auth` model answers a tool call only to
# `Authorization: Bearer <GOOD_KEY>` (tests/src/provider/openai_completions.rs), a 401 otherwise.
good_key=$(sed -n 's/^pub const GOOD_KEY: &str = "\(.*\)";$/\1/p' tests/src/provider/openai_completions.rs)
[[ -n $good_key ]] || fail "no GOOD_KEY in tests/src/provider/openai_completions.rs"
run_by_hand auth "$good_key"
{ ((rc == 0)) && grep -Eqx 'provider: auth completed a tool call \([0-9]+ ms\)' "$TMP/hand.err"; } ||
  fail "by hand: the key in $D_KEY did not reach the fake as its bearer: exit $rc; $(cat "$TMP/hand.err")"
run_by_hand auth wrong-key
{ ((rc == 1)) && grep -q 'HTTP 401' "$TMP/hand.err" && ! grep -q 'completed a tool call' "$TMP/hand.err"; } ||
  fail "by hand: a wrong key was not refused: exit $rc; $(cat "$TMP/hand.err")"
