import NimbusStore
import PostgresNIO

extension PostgresStore {
    /// A named, forward-only step of the database's schema. Never edit one that has shipped; add the next.
    struct Migration {
        var name: String
        var statements: [String]
    }

    /// Every migration, in order.
    ///
    /// The tables mirror SQLite's (`docs/storage.md`), in PostgreSQL's types: texts that are keys or names
    /// compare by their bytes (`COLLATE "C"`, SQLite's BINARY), times are milliseconds since 1970, and
    /// an index row keeps its value in the column of its kind (`number`, exact as `numeric` for 64-bit
    /// integers and doubles alike, or `text`), so numbers compare by value and before text, as in SQLite.
    static let migrations: [Migration] = [
        Migration(
            name: "2026-11-28-initial",
            statements: [
                """
                CREATE TABLE accounts (
                    id text PRIMARY KEY,
                    email text NOT NULL,
                    password_hash text NOT NULL,
                    is_administrator boolean NOT NULL DEFAULT false,
                    created_at bigint NOT NULL,
                    first_name text,
                    last_name text,
                    phone_number text,
                    discoverable boolean NOT NULL DEFAULT false
                )
                """,
                // SQLite's NOCASE (ASCII letters folded): one account per email whatever its case.
                "CREATE UNIQUE INDEX accounts_by_email ON accounts (lower(email COLLATE \"C\"))",
                "CREATE INDEX accounts_by_phone_number ON accounts (phone_number) WHERE phone_number IS NOT NULL",
                """
                CREATE TABLE devices (
                    id text PRIMARY KEY,
                    account_id text NOT NULL REFERENCES accounts(id),
                    name text NOT NULL,
                    last_seen_at bigint NOT NULL
                )
                """,
                "CREATE INDEX devices_by_account ON devices (account_id)",
                """
                CREATE TABLE sessions (
                    token_digest text PRIMARY KEY,
                    account_id text NOT NULL REFERENCES accounts(id),
                    device_id text NOT NULL REFERENCES devices(id),
                    expires_at bigint NOT NULL,
                    revoked boolean NOT NULL DEFAULT false
                )
                """,
                "CREATE TABLE teams (team_id text PRIMARY KEY, name text NOT NULL)",
                """
                CREATE TABLE apps (
                    bundle_id text PRIMARY KEY,
                    team_id text NOT NULL REFERENCES teams(team_id),
                    kv_store_identifier text NOT NULL
                )
                """,
                """
                CREATE TABLE containers (
                    identifier text PRIMARY KEY,
                    team_id text NOT NULL REFERENCES teams(team_id),
                    package_extensions text
                )
                """,
                """
                CREATE TABLE entitlements (
                    bundle_id text NOT NULL REFERENCES apps(bundle_id),
                    container text NOT NULL REFERENCES containers(identifier),
                    PRIMARY KEY (bundle_id, container)
                )
                """,
                """
                CREATE TABLE api_tokens (
                    id text PRIMARY KEY,
                    token_digest text NOT NULL UNIQUE,
                    container text NOT NULL REFERENCES containers(identifier),
                    bundle_id text NOT NULL REFERENCES apps(bundle_id),
                    name text NOT NULL,
                    revoked boolean NOT NULL DEFAULT false
                )
                """,
                """
                CREATE TABLE server_keys (
                    id text PRIMARY KEY,
                    container text NOT NULL REFERENCES containers(identifier),
                    public_key_pem text NOT NULL,
                    creator_account_id text NOT NULL REFERENCES accounts(id),
                    name text NOT NULL,
                    revoked boolean NOT NULL DEFAULT false
                )
                """,
                """
                CREATE TABLE asset_uploads (
                    id text PRIMARY KEY,
                    owner text NOT NULL,
                    container text NOT NULL,
                    expires_at bigint NOT NULL,
                    blob_id text,
                    size bigint,
                    checksum text,
                    receipt_digest text UNIQUE
                )
                """,
                """
                CREATE TABLE schemas (
                    container text NOT NULL REFERENCES containers(identifier),
                    environment text NOT NULL,
                    text text NOT NULL,
                    PRIMARY KEY (container, environment)
                )
                """,
                """
                CREATE TABLE role_members (
                    container text NOT NULL REFERENCES containers(identifier),
                    environment text NOT NULL,
                    role text NOT NULL,
                    account_id text NOT NULL REFERENCES accounts(id),
                    PRIMARY KEY (container, environment, role, account_id)
                )
                """,
                """
                CREATE TABLE restores (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    epoch bigint NOT NULL UNIQUE,
                    backup text NOT NULL,
                    restored_at bigint NOT NULL
                )
                """,
                // Zone ids are part of change tokens: an identity column never hands one out twice.
                """
                CREATE TABLE zones (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    account_id text COLLATE "C" NOT NULL,
                    service text COLLATE "C" NOT NULL,
                    name text COLLATE "C" NOT NULL,
                    kind text NOT NULL,
                    container text,
                    environment text,
                    sequence bigint NOT NULL DEFAULT 0,
                    live_entries bigint NOT NULL DEFAULT 0,
                    live_bytes bigint NOT NULL DEFAULT 0,
                    changed_at bigint NOT NULL DEFAULT 0,
                    epoch bigint NOT NULL DEFAULT 0,
                    previous_epoch bigint,
                    restored_sequence bigint,
                    UNIQUE (account_id, service, name)
                )
                """,
                "CREATE INDEX zones_by_change ON zones (account_id, service, changed_at)",
                "CREATE INDEX zones_by_kind ON zones (kind, container, environment)",
                """
                CREATE TABLE service_sequences (
                    account_id text NOT NULL,
                    service text NOT NULL,
                    sequence bigint NOT NULL,
                    epoch bigint NOT NULL DEFAULT 0,
                    previous_epoch bigint,
                    restored_sequence bigint,
                    PRIMARY KEY (account_id, service)
                )
                """,
                """
                CREATE TABLE zone_tombstones (
                    account_id text NOT NULL,
                    service text NOT NULL,
                    name text COLLATE "C" NOT NULL,
                    changed_at bigint NOT NULL,
                    PRIMARY KEY (account_id, service, name)
                )
                """,
                """
                CREATE TABLE entries (
                    zone_id bigint NOT NULL REFERENCES zones(id),
                    key text COLLATE "C" NOT NULL,
                    payload bytea,
                    size bigint NOT NULL,
                    sequence bigint NOT NULL,
                    audience text,
                    PRIMARY KEY (zone_id, key)
                )
                """,
                "CREATE UNIQUE INDEX entries_by_sequence ON entries (zone_id, sequence)",
                """
                CREATE TABLE index_fields (
                    id bigint PRIMARY KEY,
                    kind text NOT NULL,
                    field text NOT NULL,
                    UNIQUE (kind, field)
                )
                """,
                """
                CREATE TABLE entry_index (
                    zone_id bigint NOT NULL,
                    sequence bigint NOT NULL,
                    field bigint NOT NULL,
                    position integer NOT NULL,
                    number numeric,
                    text text COLLATE "C",
                    longitude double precision,
                    PRIMARY KEY (zone_id, sequence, field, position)
                )
                """,
                "CREATE INDEX entry_index_by_number ON entry_index (zone_id, field, number) WHERE number IS NOT NULL",
                "CREATE INDEX entry_index_by_text ON entry_index (zone_id, field, text) WHERE text IS NOT NULL",
                """
                CREATE TABLE zone_grants (
                    zone_id bigint NOT NULL REFERENCES zones(id),
                    scope text COLLATE "C" NOT NULL,
                    grantee text COLLATE "C" NOT NULL REFERENCES accounts(id),
                    permission text NOT NULL,
                    accepted boolean NOT NULL DEFAULT false,
                    PRIMARY KEY (zone_id, scope, grantee)
                )
                """,
                "CREATE INDEX zone_grants_by_grantee ON zone_grants (grantee)",
                """
                CREATE TABLE device_watermarks (
                    device_id text NOT NULL REFERENCES devices(id),
                    zone_id bigint NOT NULL REFERENCES zones(id),
                    sequence bigint NOT NULL,
                    PRIMARY KEY (device_id, zone_id)
                )
                """,
                """
                CREATE TABLE index_backfills (
                    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                    container text NOT NULL,
                    environment text NOT NULL,
                    kind text NOT NULL,
                    zone_id bigint NOT NULL DEFAULT 0,
                    sequence bigint NOT NULL DEFAULT 0
                )
                """,
                "CREATE TABLE zone_purges (zone_id bigint PRIMARY KEY)",
                // Great-circle distance on a sphere of Earth's mean radius, as `greatCircleMeters` measures it.
                """
                CREATE FUNCTION nimbus_distance(lat1 double precision, lon1 double precision, lat2 double precision, lon2 double precision)
                RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
                    SELECT 2 * 6371008.8 * asin(least(1, sqrt(
                        sin(radians(lat2 - lat1) / 2) ^ 2
                        + cos(radians(lat1)) * cos(radians(lat2)) * sin(radians(lon2 - lon1) / 2) ^ 2)))
                $$
                """,
            ]),
        Migration(
            name: "2026-11-28-periodic-runs",
            statements: ["CREATE TABLE periodic_runs (job text PRIMARY KEY, started_at bigint NOT NULL)"]),
        Migration(
            name: "2026-11-28-team-members",
            statements: [
                """
                CREATE TABLE team_members (
                    team_id text NOT NULL REFERENCES teams(team_id),
                    account_id text NOT NULL REFERENCES accounts(id),
                    PRIMARY KEY (team_id, account_id)
                )
                """,
                "CREATE INDEX team_members_by_account ON team_members (account_id)",
            ]),
        Migration(
            name: "2026-11-28-token-origins",
            statements: ["ALTER TABLE api_tokens ADD COLUMN allowed_origins text NOT NULL DEFAULT ''"]),
        Migration(
            name: "2026-11-29-record-history",
            statements: [
                """
                CREATE TABLE record_history (
                    zone_id bigint NOT NULL REFERENCES zones(id),
                    key text COLLATE "C" NOT NULL,
                    sequence bigint NOT NULL,
                    note bytea NOT NULL,
                    PRIMARY KEY (zone_id, key, sequence)
                )
                """
            ]),
    ]

    /// An arbitrary constant: the advisory lock nodes hold while one of them migrates.
    private static let migrationLock: Int64 = 0x4E_494D_4255_53

    /// Applies the migrations the database lacks, in one transaction, while holding a lock that other
    /// nodes starting at the same time wait for.
    func migrate(_ migrating: @escaping @Sendable ([String]) throws -> Void) async throws {
        try await transaction { connection in
            try await connection.run("SELECT pg_advisory_xact_lock(\(Self.migrationLock))")
            try await connection.run(
                "CREATE TABLE IF NOT EXISTS nimbus_migrations (identifier text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            let applied = Set(
                try await connection.run("SELECT identifier FROM nimbus_migrations").values(
                    String.self))
            let known = Set(Self.migrations.map(\.name))
            let unknown = applied.subtracting(known).sorted()
            guard unknown.isEmpty else { throw StoreError.newerDatabase(unknownMigrations: unknown) }
            let pending = Self.migrations.filter { !applied.contains($0.name) }
            guard !pending.isEmpty else { return }
            if !applied.isEmpty { try migrating(pending.map(\.name)) }
            for migration in pending {
                for statement in migration.statements {
                    try await connection.run(PostgresQuery(unsafeSQL: statement))
                }
                try await connection.run(
                    "INSERT INTO nimbus_migrations (identifier) VALUES (\(migration.name))")
            }
        }
    }

    /// Marks the database as migrated by a later Nimbus, for tests of the refusal to open it.
    package func simulateNewerVersion(migration: String) async throws {
        try await rows("INSERT INTO nimbus_migrations (identifier) VALUES (\(migration))")
    }
}
