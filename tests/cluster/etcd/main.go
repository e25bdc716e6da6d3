// etcd for the test control plane: the server Kubernetes itself requires, built from Go modules
// because Debian's etcd 3.4 is too old for a current kube-apiserver.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
