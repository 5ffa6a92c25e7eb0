// Command etcd-test-server is a one-member etcd built from the module's
// own etcd server (embed), for tests that run etcd as a process of its
// own: killed with SIGKILL and restarted on its data directory. It is
// never part of a release (scripts/build.sh does not build it).
//
//	etcd-test-server -data-dir DIR -listen HOST:PORT -advertise HOST:PORT -peer HOST:PORT
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/cyberia-to/cyber-supervisor/internal/etcdtest"
)

func main() {
	dir := flag.String("data-dir", "", "data directory")
	listen := flag.String("listen", "127.0.0.1:2379", "client address to listen on")
	advertise := flag.String("advertise", "", "client address to advertise (default: -listen)")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "etcd-test-server: -data-dir is required")
		os.Exit(2)
	}
	if *advertise == "" {
		*advertise = *listen
	}
	cfg, err := etcdtest.Config(*dir, *listen, *advertise, *peer, true)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-test-server:", err)
		os.Exit(2)
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etcd-test-server:", err)
		os.Exit(1)
	}
	<-e.Server.ReadyNotify()
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	select {
	case <-sig:
	case err := <-e.Err():
		fmt.Fprintln(os.Stderr, "etcd-test-server:", err)
	}
	e.Close()
}
