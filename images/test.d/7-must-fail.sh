# images/test, phase 7: each check fails when it should.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

# A copy of $2 with $3 replaced by $4 must make $5 fail, saying $6; the edit must change the copy.
must_fail() {
  local what=$1 file=$2 from=$3 to=$4 check=$5 want=$6 text copy
  copy=$TMP/broken.${file##*.}
  text=$(<"$file")
  [[ $text == *"$from"* ]] || fail "negative case \"$what\": $file holds no \"$from\" to change"
  printf '%s\n' "${text/"$from"/"$to"}" >"$copy"
  if ("$check" "$copy") >"$TMP/broken.out" 2>&1; then fail "negative case \"$what\": $check passed"; fi
  grep -qF -- "$want" "$TMP/broken.out" || fail "negative case \"$what\": $check failed otherwise: $(cat "$TMP/broken.out")"
  say "negative: $what: $(tail -n 1 "$TMP/broken.out" | sed 's/^images\/test: FAIL: //' | cut -c1-170)"
}

phase "negative cases (README copies, a pod YAML)"
must_fail "docker: no --cap-drop ALL" "$README" "--cap-drop ALL " "" docker_line "lacks --cap-drop ALL"
must_fail "docker: the key as a literal" "$README" "-e JR2_PROVIDER_API_KEY " "-e JR2_PROVIDER_API_KEY=sk-a-literal-key " \
  docker_line "not a variable's name alone"
must_fail "docker: an option it does not map" "$README" "--read-only " "--read-only --privileged " docker_line \
  "does not know what --privileged restricts"
must_fail "kubectl: no drop ALL" "$README" '"capabilities": {"drop": ["ALL"]}, ' "" kubectl_line "does not drop ALL"
must_fail "kubectl: the key as a literal" "$README" '"valueFrom": {"secretKeyRef": {"name": "<secret>", "key": "<key>"}}' \
  '"value": "sk-a-literal-key"' kubectl_line "is not from a secretKeyRef alone"
must_fail "kubectl: a misspelt field, which kubectl drops" "$README" '"readOnlyRootFilesystem"' '"readOnlyRootFileSystem"' \
  kubectl_line "not the check pod's restrictions"
must_fail "kubectl: args other than the docker line's" "$README" '"--model", "Qwen/Qwen3-32B"' '"--model", "Qwen/Qwen3-8B"' \
  kubectl_line "not the docker line's image and args"
# kubectl writes only fields it knows, so the schema's check is shown on its YAML with one it does not.
must_fail "pod YAML: a field 1.35 does not have" "$TMP/pod-readme.yaml" $'\nspec:\n' $'\nspec:\n  automountServiceAccountTokens: false\n' \
  check_pod "kubernetes-validate --strict -k 1.35.0"

phase "done"
say "all image checks passed in $(($(date +%s) - t0)) s"
