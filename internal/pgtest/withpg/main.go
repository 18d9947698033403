// Command withpg runs a command against one throwaway PostgreSQL cluster:
// it starts the cluster (pgtest.StartServer), runs the command with
// GRAPHMILL_TEST_DATABASE_URL naming it and TMPDIR a directory beside it (in
// memory when the cluster is), stops and removes both when the command
// ends, whatever its outcome, and exits with the command's status. make test runs every test package under it, so that the packages
// share one cluster (each migrates a template database of its own) instead
// of starting one each.
//
//	go build -o bin/withpg ./internal/pgtest/withpg && bin/withpg go test ./...
//
// It prints nothing of its own unless the cluster cannot start, so the
// command's output ends the run. Interrupts and terminations are passed to
// the command, and the cluster is stopped once it has exited; should withpg
// itself be killed, the next test run stops the cluster it left.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/graphmill/graphmill/internal/pgtest"
)

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: withpg command [argument...]")
		return 2
	}
	// Caught from the start, so that no signal ends withpg before the
	// cluster is stopped.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	ctx := context.Background()
	srv, err := pgtest.StartServer(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg: start PostgreSQL:", err)
		return 1
	}
	defer srv.Stop(ctx)
	tmp, err := srv.TempDir()
	if err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}

	cmd := exec.CommandContext(ctx, args[0], args[1:]...) //nolint:gosec // the command make test gives
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), pgtest.EnvURL+"="+srv.URL(), "TMPDIR="+tmp)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "withpg:", err)
		return 1
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case s := <-sigs:
			// A terminal's Ctrl-C reaches the command's process group
			// too; a signal sent to withpg alone is passed on.
			_ = cmd.Process.Signal(s)
		case err := <-done:
			var exit *exec.ExitError
			switch {
			case err == nil:
				return 0
			case errors.As(err, &exit):
				if code := exit.ExitCode(); code > 0 {
					return code
				}
				return 1 // killed by a signal
			default:
				fmt.Fprintln(os.Stderr, "withpg:", err)
				return 1
			}
		}
	}
}
