# images/test, phase 2: what the archives hold.
# Sourced by images/test, which defines fail, say, phase, ROOT, TMP, NS and the cleanup; the phases run in their
# order and share its variables.

phase "archive contents"
MAX_LAYER=$((4 * 1024 * 1024))
for arch in "${ARCHES[@]}"; do
  case $arch in
    amd64) machine="x86-64" ;;
    arm64) machine="ARM aarch64" ;;
  esac
  oci=$TMP/oci-$arch
  mkdir -p "$oci"
  tar -xf "$OUT/jr2-probe-$VERSION-$arch.oci.tar" -C "$oci"
  [[ $(jq '.manifests | length' "$oci/index.json") == 1 ]] || fail "$arch: the oci-archive's index has not exactly one manifest"
  [[ $(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$oci/index.json") == "$VERSION" ]] ||
    fail "$arch: the oci-archive's manifest is not tagged $VERSION"
  blob() { echo "$oci/blobs/sha256/${1#sha256:}"; }
  manifest=$(blob "$(jq -r '.manifests[0].digest' "$oci/index.json")")
  [[ $(jq '.layers | length' "$manifest") == 1 ]] || fail "$arch: not exactly one layer: $(jq -c .layers "$manifest")"
  [[ $(jq -r '.layers[0].mediaType' "$manifest") == application/vnd.oci.image.layer.v1.tar+gzip ]] ||
    fail "$arch: the layer is not a gzip tar layer"
  layer_digest=$(jq -r '.layers[0].digest' "$manifest")
  layer=$(blob "$layer_digest")
  [[ sha256:$(sha256sum "$layer" | cut -c1-64) == "$layer_digest" ]] || fail "$arch: the layer blob does not match its digest"
  layer_size=$(stat -c %s "$layer")
  [[ $layer_size == $(jq -r '.layers[0].size' "$manifest") ]] || fail "$arch: the layer's size is not the manifest's"

  config=$(blob "$(jq -r '.config.digest' "$manifest")")
  jq -e --arg arch "$arch" --arg v "$VERSION" '
      .architecture == $arch and .os == "linux"
      and .config.User == "65532:65532"
      and .config.Entrypoint == ["/jr2-probe"]
      and (.config.Cmd // null) == null
      and .config.Labels["org.opencontainers.image.version"] == $v
      and (.config.Labels["org.opencontainers.image.source"] | length > 0)
      and (.config.Labels["org.opencontainers.image.revision"] | test("^[0-9a-f]{40}$"))
      and (.rootfs.diff_ids | length) == 1' "$config" >/dev/null ||
    fail "$arch: the image config is not what it should be: $(jq -c . "$config")"
  diff_id=$(jq -r '.rootfs.diff_ids[0]' "$config")
  [[ sha256:$(gzip -dc "$layer" | sha256sum | cut -c1-64) == "$diff_id" ]] || fail "$arch: the layer does not match its diff_id"

  listing=$(tar -tvzf "$layer")
  [[ $(wc -l <<<"$listing") == 1 ]] || fail "$arch: the layer holds more than one entry: $listing"
  [[ $listing =~ ^-rwxr-xr-x\ 0/0\ +[0-9]+\ [0-9-]+\ [0-9:]+\ jr2-probe$ ]] ||
    fail "$arch: the layer's one entry is not a root-owned 0755 /jr2-probe: $listing"
  tar -tzf "$layer" | grep -Eq '(^|/)(bin/sh|bin/busybox|bin/bash)$' && fail "$arch: the layer holds a shell"
  mkdir -p "$TMP/$arch"
  tar -xzf "$layer" -C "$TMP/$arch"
  desc=$(file -b "$TMP/$arch/jr2-probe")
  [[ $desc == *"$machine"* ]] || fail "$arch: the binary is not $machine: $desc"
  [[ $desc == *"statically linked"* || $desc == *"static-pie linked"* ]] || fail "$arch: the binary is not static: $desc"
  ((layer_size <= MAX_LAYER)) || fail "$arch: the compressed layer is $layer_size bytes, over 4 MiB"
  # Where it was built is not in it: the checkout (relative paths), cargo's home and the target dir (remapped).
  if found=$(build_path_in "$TMP/$arch/jr2-probe"); then fail "$arch: the binary holds the build machine's path $found"; fi

  # The docker-archive: the same layer (uncompressed there), the same config, tagged for kind.
  dock=$TMP/docker-$arch
  mkdir -p "$dock"
  tar -xf "$OUT/jr2-probe-$VERSION-$arch.docker.tar" -C "$dock"
  jq -e --arg tag "ghcr.io/jr2/jr2-probe:$VERSION" 'length == 1 and (.[0].Layers | length) == 1 and .[0].RepoTags == [$tag]' \
    "$dock/manifest.json" >/dev/null || fail "$arch: the docker-archive's manifest.json: $(jq -c . "$dock/manifest.json")"
  dlayer=$dock/$(jq -r '.[0].Layers[0]' "$dock/manifest.json")
  [[ sha256:$(sha256sum "$dlayer" | cut -c1-64) == "$diff_id" ]] || fail "$arch: the docker-archive's layer is not the image's"
  jq -e --arg arch "$arch" '.architecture == $arch and .config.User == "65532:65532" and .config.Entrypoint == ["/jr2-probe"]' \
    "$dock/$(jq -r '.[0].Config' "$dock/manifest.json")" >/dev/null || fail "$arch: the docker-archive's config differs"

  say "$arch: one layer, one file (/jr2-probe, $desc)"
  say "$arch: compressed layer $layer_size bytes = $(awk -v n="$layer_size" 'BEGIN { printf "%.2f", n / 1048576 }') MiB (limit 4 MiB); binary $(stat -c %s "$TMP/$arch/jr2-probe") bytes"
done
