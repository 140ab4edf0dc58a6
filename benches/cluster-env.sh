# Sourced by the cluster bench scripts: the release build to run, the
# credentials and secrets shared by the nodes, the gateway and the load
# generator, and `node INDEX` starting node INDEX (127.0.0.INDEX+1:9100,
# two disk directories under $d) with its pid in pids[INDEX].
t="${CARGO_TARGET_DIR:-target}/release"
export AWS_ACCESS_KEY_ID=benchuser AWS_SECRET_ACCESS_KEY=benchsecret123 AWS_DEFAULT_REGION=us-east-1
export GRANARY_ROOT_USER=benchuser GRANARY_ROOT_PASSWORD=benchsecret123
export GRANARY_CLUSTER_SECRET=bench-cluster-secret-0123456789
export GRANARY_MASTER_KEY=MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
pids=()
node() {
    "$t/granary" node --disks "$d/n$1/d1" "$d/n$1/d2" --address "127.0.0.$(( $1 + 1 )):9100" \
        >"$d/n$1.out" 2>"$d/n$1.log" &
    pids[$1]=$!
}
