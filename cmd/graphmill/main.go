// Command graphmill is the Graphmill knowledge-graph server and its
// administration tool.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/graphmill/graphmill/internal/audit"
	"github.com/graphmill/graphmill/internal/auth"
	"github.com/graphmill/graphmill/internal/config"
	"github.com/graphmill/graphmill/internal/postgres"
	"github.com/graphmill/graphmill/internal/tenancy"
	"github.com/graphmill/graphmill/migrations"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	environ := os.Environ()
	// Key material leaves the process environment once copied: children
	// and /proc/<pid>/environ do not see it. Best effort: the unset always
	// happens; overwriting what /proc shows needs Linux.
	_ = config.HideSecrets()
	err := run(ctx, os.Args[1:], environ, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphmill:", err)
		os.Exit(exitCode(err))
	}
}

// run executes one command line with the given environment.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	return runIO(ctx, args, environ, os.Stdin, stdout, stderr)
}

// runIO is run with the standard input given (the client's chat reads it).
func runIO(ctx context.Context, args, environ []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := &cobra.Command{
		Use:           "graphmill",
		Short:         "Graphmill knowledge-graph server",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)

	load := func() (config.Config, *slog.Logger, error) {
		cfg, err := config.Load(environ)
		if err != nil {
			return cfg, nil, err
		}
		return cfg, newLogger(cfg, stderr), nil
	}

	serve := func(use, short string, workersOnly bool) *cobra.Command {
		return &cobra.Command{
			Use:   use,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(*cobra.Command, []string) error {
				return serveUntilDone(ctx, load, stdout, workersOnly)
			},
		}
	}
	root.AddCommand(
		serve("serve", "Run the API server (on the embedded PostgreSQL when GRAPHMILL_DATABASE_URL is unset)", false),
		serve("worker", "Run the job workers only (no API, no scheduler) against GRAPHMILL_DATABASE_URL, next to graphmill serve", true),
	)

	root.AddCommand(&cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations and exit",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return withDatabase(ctx, load, func(db *database) error {
				_, err := fmt.Fprintf(stdout, "applied %d migration(s)\n", db.applied)
				return err
			})
		},
	})

	root.AddCommand(adminCommand(ctx, load, stdout), openAPICommand(stdout))

	c := &cli{ctx: ctx, environ: environ, stdin: stdin, stdout: stdout, stderr: stderr}
	root.PersistentFlags().BoolVar(&c.json, "json", false, "client commands: print JSON for scripts instead of tables")
	root.PersistentFlags().DurationVar(&c.requestTimeout, "request-timeout", requestTimeoutDefault,
		"client commands: give up on a server that has not answered a request within this long (0: never; event streams and chat answers are not bounded)")
	root.PersistentFlags().StringVar(&c.project, "project", "", "client commands: the project id (default: GRAPHMILL_PROJECT, the login's, or the token's only project)")
	root.AddCommand(clientCommands(c)...)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitUsage, err) })
	usageCodes(root)
	return root.ExecuteContext(ctx)
}

// usageCodes makes every bad command line end with exitUsage (cobra's own
// refusals are plain errors, and a group given an unknown command prints
// its help and succeeds): a command with subcommands refuses any argument
// as an unknown command (and prints its help when given none); any other
// command's argument check answers with a usage error.
func usageCodes(cmd *cobra.Command) {
	if cmd.HasSubCommands() {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2 // cobra's default, set where it reports an unknown command
			}
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += " (did you mean " + strings.Join(s, ", ") + "?)"
			}
			return usageErr("%s: run %s --help", msg, cmd.CommandPath())
		}
		cmd.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		for _, sub := range cmd.Commands() {
			usageCodes(sub)
		}
		return
	}
	if check := cmd.Args; check != nil {
		cmd.Args = func(cmd *cobra.Command, args []string) error {
			err := check(cmd, args)
			if _, coded := errors.AsType[*exitCodeError](err); err != nil && !coded {
				return withCode(exitUsage, err)
			}
			return err
		}
	}
}

// serveUntilDone starts a server (or, workersOnly, the workers) and stops
// it when ctx ends (SIGINT, SIGTERM).
func serveUntilDone(ctx context.Context, load func() (config.Config, *slog.Logger, error), stdout io.Writer, workersOnly bool) error {
	cfg, logger, err := load()
	if err != nil {
		return err
	}
	if workersOnly && cfg.DatabaseURL == "" {
		return fmt.Errorf("graphmill worker needs GRAPHMILL_DATABASE_URL: the embedded database belongs to graphmill serve")
	}
	m := &Main{Config: cfg, Logger: logger, Stdout: stdout, WorkersOnly: workersOnly}
	if err := m.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	logger.Info("shutting down")
	m.Stop(context.WithoutCancel(ctx))
	return nil
}

// newLogger logs to w in the format logFormat picks.
func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.SlogLevel()}
	if logFormat(cfg.LogFormat, isTerminal(w)) == config.LogText {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// logFormat is the configured log format or, when none is, text for a
// person at a terminal and JSON for everything else (log collectors).
func logFormat(configured string, terminal bool) string {
	switch {
	case configured != "":
		return configured
	case terminal:
		return config.LogText
	}
	return config.LogJSON
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits in an int
}

// withDatabase loads the configuration, opens the database for a one-shot
// command, migrated, and closes it afterwards (stopping the embedded
// cluster only if it started it).
func withDatabase(ctx context.Context, load func() (config.Config, *slog.Logger, error), fn func(*database) error) error {
	cfg, logger, err := load()
	if err != nil {
		return err
	}
	db, err := openDatabase(ctx, cfg, logger, false, nil)
	if err != nil {
		return err
	}
	defer db.close(ctx, logger)
	if db.applied, err = postgres.Migrate(ctx, db.pool, migrations.FS); err != nil {
		return err
	}
	return fn(db)
}

func adminCommand(ctx context.Context, load func() (config.Config, *slog.Logger, error), stdout io.Writer) *cobra.Command {
	admin := &cobra.Command{
		Use: "admin", Short: "Administer users and tokens directly in the database",
		Long: "Administer users and tokens directly in the database. Each creation is recorded in the superadmin audit log " +
			"(user.create, user.token_create) with the command line as the actor (the nil UUID, no token, request \"cli: <command>\").",
	}

	token := &cobra.Command{Use: "token", Short: "API tokens"}
	var user, scopes, project, name string
	var expires time.Duration
	create := &cobra.Command{
		Use:   "create",
		Short: "Mint an API token for a user and print it (shown once)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDatabase(ctx, load, func(db *database) error {
				svc := tenancy.NewService(db.pool, nil, time.Now)
				uid, err := svc.ResolveUser(ctx, user)
				if err != nil {
					return fmt.Errorf("user %q: %w", user, err)
				}
				p := tenancy.CreateTokenParams{UserID: uid, Name: name}
				if scopes == "all" {
					p.Scopes = auth.AllScopes.Names()
				} else {
					p.Scopes = strings.Split(scopes, ",")
				}
				if project != "" {
					pid, err := uuid.Parse(project)
					if err != nil {
						return fmt.Errorf("--project must be a project id: %w", err)
					}
					p.ProjectID = &pid
				}
				if expires > 0 {
					at := time.Now().Add(expires)
					p.ExpiresAt = &at
				}
				t, err := svc.CreateToken(ctx, nil, p, commandAudited(db, cmd, audit.UserTokenCreate, uid))
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, t.Token)
				return nil
			})
		},
	}
	create.Flags().StringVar(&user, "user", "", "user id, email or unique display name (required)")
	create.Flags().StringVar(&scopes, "scopes", "", "comma-separated scopes, or 'all' (required)")
	create.Flags().StringVar(&project, "project", "", "bind the token to this project id")
	create.Flags().StringVar(&name, "name", "cli", "token name")
	create.Flags().DurationVar(&expires, "expires", 0, "lifetime, for example 720h (default: no expiry)")
	_ = create.MarkFlagRequired("user")
	_ = create.MarkFlagRequired("scopes")
	token.AddCommand(create)

	users := &cobra.Command{Use: "user", Short: "Local users"}
	var email, display string
	userCreate := &cobra.Command{
		Use:   "create",
		Short: "Create a local user and print its id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDatabase(ctx, load, func(db *database) error {
				u, err := tenancy.NewService(db.pool, nil, time.Now).CreateUser(ctx, email, display, commandAudited(db, cmd, audit.UserCreate))
				if err != nil {
					return err
				}
				fmt.Fprintln(stdout, u.ID)
				return nil
			})
		},
	}
	userCreate.Flags().StringVar(&email, "email", "", "primary email (required)")
	userCreate.Flags().StringVar(&display, "name", "", "display name")
	_ = userCreate.MarkFlagRequired("email")
	users.AddCommand(userCreate)

	admin.AddCommand(token, users)
	return admin
}

// commandAudited is the step that records cmd's creation in the superadmin
// audit log, in the creation's transaction, as the API's routes record
// theirs: the records named (the user a token is minted for) and the one
// created are its targets, the command line its actor
// (audit.Service.RecordCommand).
func commandAudited(db *database, cmd *cobra.Command, action audit.Action, named ...uuid.UUID) tenancy.CreatedStep {
	return func(ctx context.Context, tx pgx.Tx, id uuid.UUID) error {
		_, err := audit.NewService(db.pool, time.Now).RecordCommand(ctx, tx, cmd.CommandPath(), action, append(slices.Clone(named), id))
		return err
	}
}
