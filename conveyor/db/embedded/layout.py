"""Names the design fixes: where the server listens, its superuser, and the files of
``data_dir`` (described in the package docstring)."""

#: The database superuser, and the database in the URL.
DB_USER = "postgres"
DB_NAME = "postgres"
#: TCP on loopback only: no Unix socket, so any local process connects with the URL alone.
HOST = "127.0.0.1"

PGDATA = "pgdata"
INIT_DIR = ".pgdata-init"
PWFILE = ".initdb-pwfile"
LOG_ROTATE_BYTES = 10 * 1024 * 1024


class EmbeddedPostgresError(RuntimeError):
    """The embedded PostgreSQL server is unavailable: wheel missing, start failure, bad setup."""
