#!/usr/bin/env bash
# Builds the control-plane binaries the integration tests run against
# (kube-apiserver, kubectl, etcd) from the Go module proxy, so no release
# download site is needed. Binaries are cached per version; a re-run with
# the binaries present does nothing. The last line on stdout is the directory
# to use as KUBEBUILDER_ASSETS.
#
#   KEDGE_TESTBIN_CACHE  cache root (default: $HOME/.cache/kedge-testbin)
set -euo pipefail

K8S_VERSION=v1.37.1
ETCD_VERSION=v3.6.16
# Kubernetes publishes its staging repositories as v0.<minor>.<patch>.
STAGING_VERSION="v0.${K8S_VERSION#v1.}"
K8S_MINOR="${K8S_VERSION#v1.}"
K8S_MINOR="${K8S_MINOR%%.*}"

CACHE="${KEDGE_TESTBIN_CACHE:-$HOME/.cache/kedge-testbin}"
BIN="$CACHE/bin/$K8S_VERSION"
SRC="$CACHE/src"

# The wrapper modules must never see the repository's go.mod or go.work,
# and a newer toolchain must not be fetched behind our back.
export GOTOOLCHAIN=local GOWORK=off GOFLAGS=-mod=mod

log() { echo "testbin: $*" >&2; }

present() {
	[[ -x "$BIN/kube-apiserver" && -x "$BIN/kubectl" && -x "$BIN/etcd" ]]
}

if present; then
	echo "$BIN"
	exit 0
fi

mkdir -p "$BIN" "$SRC"

# Two concurrent runs would race on the wrapper modules' go.mod files.
exec 9>"$CACHE/.lock"
if command -v flock >/dev/null 2>&1; then
	flock 9
fi
if present; then
	echo "$BIN"
	exit 0
fi

go_version="$(go env GOVERSION)"
go_version="${go_version#go}"

# install builds into a temporary name and renames it, so an interrupted build
# never leaves a binary that "present" would accept.
install_binary() {
	local name="$1"
	shift
	local tmp="$BIN/.$name.tmp.$$"
	rm -f "$tmp"
	go build -trimpath -o "$tmp" "$@"
	mv -f "$tmp" "$BIN/$name"
}

build_kubernetes() {
	local dir="$SRC/kubernetes-$K8S_VERSION"
	mkdir -p "$dir"
	# k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces
	# them with local paths, which only applies inside its own repository;
	# a consumer must point each one at the published version.
	local staging=(
		api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
		cluster-bootstrap code-generator component-base component-helpers controller-manager
		cri-api cri-client cri-streaming csi-translation-lib dynamic-resource-allocation
		endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
		kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission
		sample-apiserver streaming
	)
	{
		echo "module kedge.invalid/testbin/kubernetes"
		echo
		echo "go $go_version"
		echo
		echo "require k8s.io/kubernetes $K8S_VERSION"
		echo
		echo "replace ("
		local m
		for m in "${staging[@]}"; do
			echo "	k8s.io/$m => k8s.io/$m $STAGING_VERSION"
		done
		echo ")"
	} >"$dir/go.mod"
	cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
	(
		cd "$dir"
		log "resolving k8s.io/kubernetes $K8S_VERSION"
		go get "k8s.io/kubernetes/cmd/kube-apiserver@$K8S_VERSION" "k8s.io/kubernetes/cmd/kubectl@$K8S_VERSION"
		# Without these the binaries report an unparseable version and
		# clients (and envtest) refuse to talk to them.
		local ldflags="-s -w"
		local p
		for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
			ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$K8S_MINOR -X $p.gitTreeState=clean"
		done
		if [[ ! -x "$BIN/kube-apiserver" ]]; then
			log "building kube-apiserver (several minutes on a cold cache)"
			install_binary kube-apiserver -ldflags "$ldflags" k8s.io/kubernetes/cmd/kube-apiserver
		fi
		if [[ ! -x "$BIN/kubectl" ]]; then
			log "building kubectl"
			install_binary kubectl -ldflags "$ldflags" k8s.io/kubernetes/cmd/kubectl
		fi
	)
}

build_etcd() {
	local dir="$SRC/etcd-$ETCD_VERSION"
	mkdir -p "$dir"
	{
		echo "module kedge.invalid/testbin/etcd"
		echo
		echo "go $go_version"
	} >"$dir/go.mod"
	cat >"$dir/tools.go" <<'GO'
//go:build tools

package tools

import _ "go.etcd.io/etcd/server/v3"
GO
	(
		cd "$dir"
		log "resolving go.etcd.io/etcd/server/v3 $ETCD_VERSION"
		go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
		log "building etcd"
		install_binary etcd -ldflags "-s -w" go.etcd.io/etcd/server/v3
	)
}

if [[ ! -x "$BIN/kube-apiserver" || ! -x "$BIN/kubectl" ]]; then
	build_kubernetes
fi
if [[ ! -x "$BIN/etcd" ]]; then
	build_etcd
fi

"$BIN/kube-apiserver" --version >&2
"$BIN/etcd" --version >&2
echo "$BIN"
