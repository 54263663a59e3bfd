import GRDB
import NimbusCore

extension SQLiteStore {
    /// The migrations that rewrite or delete existing rows, not only add tables and columns: the server
    /// backs the data up before it applies one (`Backends`). Name each such migration here as it is added.
    static let dataRewritingMigrations: Set<String> = [
        "2026-11-22-records-indexes-schemas-keys", "2026-11-22-index-field-ids", "2026-11-22-index-rows-unchecked",
        "2026-11-23-repair-non-finite-record-values", "2026-11-23-zone-service-parts",
    ]

    /// Named, forward-only migrations. Never edit one that has shipped; add the next.
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("2026-11-21-accounts-developers-zones") { db in
            try db.execute(
                sql: """
                    CREATE TABLE accounts (
                        id TEXT PRIMARY KEY,
                        email TEXT NOT NULL UNIQUE COLLATE NOCASE,
                        password_hash TEXT NOT NULL,
                        is_administrator INTEGER NOT NULL DEFAULT 0,
                        created_at INTEGER NOT NULL
                    );
                    CREATE TABLE devices (
                        id TEXT PRIMARY KEY,
                        account_id TEXT NOT NULL REFERENCES accounts(id),
                        name TEXT NOT NULL,
                        last_seen_at INTEGER NOT NULL
                    );
                    CREATE INDEX devices_by_account ON devices(account_id);
                    CREATE TABLE sessions (
                        token_digest TEXT PRIMARY KEY,
                        account_id TEXT NOT NULL REFERENCES accounts(id),
                        device_id TEXT NOT NULL REFERENCES devices(id),
                        expires_at INTEGER NOT NULL,
                        revoked INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE teams (
                        team_id TEXT PRIMARY KEY,
                        name TEXT NOT NULL
                    );
                    CREATE TABLE apps (
                        bundle_id TEXT PRIMARY KEY,
                        team_id TEXT NOT NULL REFERENCES teams(team_id),
                        kv_store_identifier TEXT NOT NULL
                    );
                    CREATE TABLE containers (
                        identifier TEXT PRIMARY KEY,
                        team_id TEXT NOT NULL REFERENCES teams(team_id)
                    );
                    CREATE TABLE entitlements (
                        bundle_id TEXT NOT NULL REFERENCES apps(bundle_id),
                        container TEXT NOT NULL REFERENCES containers(identifier),
                        PRIMARY KEY (bundle_id, container)
                    );
                    CREATE TABLE api_tokens (
                        id TEXT PRIMARY KEY,
                        token_digest TEXT NOT NULL UNIQUE,
                        container TEXT NOT NULL REFERENCES containers(identifier),
                        bundle_id TEXT NOT NULL REFERENCES apps(bundle_id),
                        name TEXT NOT NULL,
                        revoked INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE zones (
                        id INTEGER PRIMARY KEY,
                        account_id TEXT NOT NULL REFERENCES accounts(id),
                        service TEXT NOT NULL,
                        name TEXT NOT NULL,
                        sequence INTEGER NOT NULL DEFAULT 0,
                        live_entries INTEGER NOT NULL DEFAULT 0,
                        live_bytes INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (account_id, service, name)
                    );
                    CREATE TABLE entries (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        key TEXT NOT NULL,
                        payload BLOB,
                        size INTEGER NOT NULL,
                        sequence INTEGER NOT NULL,
                        PRIMARY KEY (zone_id, key)
                    ) WITHOUT ROWID;
                    CREATE UNIQUE INDEX entries_by_sequence ON entries(zone_id, sequence);
                    CREATE TABLE device_watermarks (
                        device_id TEXT NOT NULL REFERENCES devices(id),
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        sequence INTEGER NOT NULL,
                        PRIMARY KEY (device_id, zone_id)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("2026-11-22-records-indexes-schemas-keys") { db in
            try db.execute(
                sql: """
                    -- Zone ids are part of change tokens, so a deleted zone's id must never be reused:
                    -- the table is rebuilt with AUTOINCREMENT (and the column ordering zone changes).
                    -- account_id names the zone's owner: an account, or a principal that is not one,
                    -- like a container's public database, so it no longer references accounts.
                    CREATE TABLE zones_v2 (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        account_id TEXT NOT NULL,
                        service TEXT NOT NULL,
                        name TEXT NOT NULL,
                        sequence INTEGER NOT NULL DEFAULT 0,
                        live_entries INTEGER NOT NULL DEFAULT 0,
                        live_bytes INTEGER NOT NULL DEFAULT 0,
                        changed_at INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (account_id, service, name)
                    );
                    INSERT INTO zones_v2 (id, account_id, service, name, sequence, live_entries, live_bytes)
                        SELECT id, account_id, service, name, sequence, live_entries, live_bytes FROM zones;
                    DROP TABLE zones;
                    ALTER TABLE zones_v2 RENAME TO zones;
                    CREATE INDEX zones_by_change ON zones(account_id, service, changed_at);
                    CREATE TABLE service_sequences (
                        account_id TEXT NOT NULL,
                        service TEXT NOT NULL,
                        sequence INTEGER NOT NULL,
                        PRIMARY KEY (account_id, service)
                    ) WITHOUT ROWID;
                    CREATE TABLE zone_tombstones (
                        account_id TEXT NOT NULL,
                        service TEXT NOT NULL,
                        name TEXT NOT NULL,
                        changed_at INTEGER NOT NULL,
                        PRIMARY KEY (account_id, service, name)
                    ) WITHOUT ROWID;
                    -- Index rows belong to one version of an entry, named by its sequence: every write
                    -- appends them at the end of the primary key, and replacing the version drops them
                    -- as one contiguous range, whatever the entry's key.
                    CREATE TABLE entry_index (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        sequence INTEGER NOT NULL,
                        field TEXT NOT NULL,
                        position INTEGER NOT NULL,
                        kind TEXT NOT NULL,
                        value BLOB NOT NULL, -- BLOB affinity: values keep the type they were written with
                        longitude REAL,
                        PRIMARY KEY (zone_id, sequence, field, position)
                    ) WITHOUT ROWID;
                    CREATE INDEX entry_index_by_value ON entry_index(zone_id, kind, field, value);
                    CREATE TABLE zone_grants (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        grantee TEXT NOT NULL REFERENCES accounts(id),
                        permission TEXT NOT NULL,
                        accepted INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (zone_id, grantee)
                    ) WITHOUT ROWID;
                    CREATE INDEX zone_grants_by_grantee ON zone_grants(grantee);
                    CREATE TABLE server_keys (
                        id TEXT PRIMARY KEY,
                        container TEXT NOT NULL REFERENCES containers(identifier),
                        public_key_pem TEXT NOT NULL,
                        creator_account_id TEXT NOT NULL REFERENCES accounts(id),
                        name TEXT NOT NULL,
                        revoked INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE asset_uploads (
                        id TEXT PRIMARY KEY,
                        owner TEXT NOT NULL,
                        container TEXT NOT NULL,
                        expires_at INTEGER NOT NULL,
                        blob_id TEXT,
                        size INTEGER,
                        checksum TEXT,
                        receipt_digest TEXT UNIQUE
                    );
                    CREATE TABLE schemas (
                        container TEXT NOT NULL REFERENCES containers(identifier),
                        environment TEXT NOT NULL,
                        text TEXT NOT NULL,
                        PRIMARY KEY (container, environment)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("2026-11-22-share-scopes-entry-audience") { db in
            // Grants come in scopes (one per share) and entries keep an audience through their tombstones,
            // so a share of part of a zone can tell its participants what left it.
            try db.execute(
                sql: """
                    ALTER TABLE entries ADD COLUMN audience TEXT;
                    CREATE TABLE zone_grants_scoped (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        scope TEXT NOT NULL,
                        grantee TEXT NOT NULL REFERENCES accounts(id),
                        permission TEXT NOT NULL,
                        accepted INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (zone_id, scope, grantee)
                    ) WITHOUT ROWID;
                    INSERT INTO zone_grants_scoped (zone_id, scope, grantee, permission, accepted)
                        SELECT zone_id, 'cloudkit.zoneshare', grantee, permission, accepted FROM zone_grants;
                    DROP TABLE zone_grants;
                    ALTER TABLE zone_grants_scoped RENAME TO zone_grants;
                    CREATE INDEX zone_grants_by_grantee ON zone_grants(grantee);
                    """)
        }
        migrator.registerMigration("2026-11-22-role-members") { db in
            try db.execute(
                sql: """
                    CREATE TABLE role_members (
                        container TEXT NOT NULL REFERENCES containers(identifier),
                        environment TEXT NOT NULL,
                        role TEXT NOT NULL,
                        account_id TEXT NOT NULL REFERENCES accounts(id),
                        PRIMARY KEY (container, environment, role, account_id)
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("2026-11-22-index-field-ids") { db in
            // Index rows name their (kind, field) by an integer id (`IndexFieldID`) instead of two texts.
            db.add(function: IndexFieldID.function)
            try db.execute(
                sql: """
                    CREATE TABLE index_fields (
                        id INTEGER PRIMARY KEY,
                        kind TEXT NOT NULL,
                        field TEXT NOT NULL,
                        UNIQUE (kind, field)
                    );
                    INSERT INTO index_fields (id, kind, field)
                        SELECT DISTINCT nimbus_index_field_id(kind, field), kind, field FROM entry_index;
                    CREATE TABLE entry_index_v2 (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        sequence INTEGER NOT NULL,
                        field INTEGER NOT NULL, -- an index_fields id, not a foreign key: a check per row costs a lookup
                        position INTEGER NOT NULL,
                        value BLOB NOT NULL, -- BLOB affinity: values keep the type they were written with
                        longitude REAL,
                        PRIMARY KEY (zone_id, sequence, field, position)
                    ) WITHOUT ROWID;
                    INSERT INTO entry_index_v2 (zone_id, sequence, field, position, value, longitude)
                        SELECT zone_id, sequence, nimbus_index_field_id(kind, field), position, value, longitude
                        FROM entry_index ORDER BY zone_id, sequence, field, position;
                    DROP TABLE entry_index;
                    ALTER TABLE entry_index_v2 RENAME TO entry_index;
                    CREATE INDEX entry_index_by_value ON entry_index(zone_id, field, value);
                    """)
        }
        migrator.registerMigration("2026-11-22-index-rows-unchecked") { db in
            // Index rows cost most of a batch's writing, and each row's foreign key cost one more lookup: the
            // rows' zones are the transaction's own, and deleting a zone deletes its rows. The record service's
            // index of all words together (`tokens:allTokens`) repeated the words of each text field; a
            // search of all text now looks through those, so its rows go.
            try db.execute(
                sql: """
                    CREATE TABLE entry_index_v3 (
                        zone_id INTEGER NOT NULL,
                        sequence INTEGER NOT NULL,
                        field INTEGER NOT NULL,
                        position INTEGER NOT NULL,
                        value BLOB NOT NULL,
                        longitude REAL,
                        PRIMARY KEY (zone_id, sequence, field, position)
                    ) WITHOUT ROWID;
                    INSERT INTO entry_index_v3 (zone_id, sequence, field, position, value, longitude)
                        SELECT zone_id, sequence, field, position, value, longitude FROM entry_index
                        WHERE field NOT IN (SELECT id FROM index_fields WHERE field = 'tokens:allTokens')
                        ORDER BY zone_id, sequence, field, position;
                    DROP TABLE entry_index;
                    ALTER TABLE entry_index_v3 RENAME TO entry_index;
                    CREATE INDEX entry_index_by_value ON entry_index(zone_id, field, value);
                    DELETE FROM index_fields WHERE field = 'tokens:allTokens';
                    """)
        }
        migrator.registerMigration("2026-11-23-repair-non-finite-record-values") { db in
            try NonFiniteValueRepair.run(db)
        }
        migrator.registerMigration("2026-11-23-account-profiles") { db in
            // A user's names and phone number, and whether others may discover them (CloudKit's users/discover).
            try db.execute(
                sql: """
                    ALTER TABLE accounts ADD COLUMN first_name TEXT;
                    ALTER TABLE accounts ADD COLUMN last_name TEXT;
                    ALTER TABLE accounts ADD COLUMN phone_number TEXT;
                    ALTER TABLE accounts ADD COLUMN discoverable INTEGER NOT NULL DEFAULT 0;
                    CREATE INDEX accounts_by_phone_number ON accounts(phone_number) WHERE phone_number IS NOT NULL;
                    """)
        }
        migrator.registerMigration("2026-11-23-zone-service-parts") { db in
            // A zone's service by its parts, so that queries select a kind of service, a container or an
            // environment by value rather than by matching the start of a string.
            try db.execute(
                sql: """
                    ALTER TABLE zones ADD COLUMN kind TEXT NOT NULL DEFAULT '';
                    ALTER TABLE zones ADD COLUMN container TEXT;
                    ALTER TABLE zones ADD COLUMN environment TEXT;
                    """)
            for text in try String.fetchAll(db, sql: "SELECT DISTINCT service FROM zones") {
                guard let service = ZoneAddress.Service(encoded: text) else { continue }
                try db.execute(
                    sql: "UPDATE zones SET kind = ?, container = ?, environment = ? WHERE service = ?",
                    arguments: [service.kind.rawValue, service.container, service.environment, text])
            }
            try db.execute(sql: "CREATE INDEX zones_by_kind ON zones(kind, container, environment)")
        }
        migrator.registerMigration("2026-11-23-long-jobs") { db in
            // Work too long for one transaction, recorded so that a stop resumes it: index backfills (a cursor
            // per job) and the purge of deleted zones' entries.
            try db.execute(
                sql: """
                    CREATE TABLE index_backfills (
                        id INTEGER PRIMARY KEY,
                        container TEXT NOT NULL,
                        environment TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        zone_id INTEGER NOT NULL DEFAULT 0,
                        sequence INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE TABLE zone_purges (zone_id INTEGER PRIMARY KEY);
                    """)
        }
        migrator.registerMigration("2026-11-24-container-package-extensions") { db in
            // A JSON array of the folder extensions the container's documents treat as file packages; NULL:
            // Container.defaultPackageExtensions.
            try db.execute(sql: "ALTER TABLE containers ADD COLUMN package_extensions TEXT")
        }
        migrator.registerMigration("2026-11-25-restore-epochs") { db in
            // Each restore from a backup (`EmbeddedRestore`) is a row, in order, with a random epoch of its
            // own; zones and service sequences record the epoch their history is in, the one before it and
            // where the restored backup left them (`SequenceHistory`), so tokens from a history a restore
            // lost are told apart, even when the same backup is restored twice.
            try db.execute(
                sql: """
                    CREATE TABLE restores (
                        id INTEGER PRIMARY KEY,
                        epoch INTEGER NOT NULL UNIQUE,
                        backup TEXT NOT NULL,
                        restored_at INTEGER NOT NULL
                    );
                    ALTER TABLE zones ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE zones ADD COLUMN previous_epoch INTEGER;
                    ALTER TABLE zones ADD COLUMN restored_sequence INTEGER;
                    ALTER TABLE service_sequences ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE service_sequences ADD COLUMN previous_epoch INTEGER;
                    ALTER TABLE service_sequences ADD COLUMN restored_sequence INTEGER;
                    """)
        }
        migrator.registerMigration("2026-11-28-periodic-runs") { db in
            // When each periodic job's last run started (`PeriodicJobStore`).
            try db.execute(sql: "CREATE TABLE periodic_runs (job TEXT PRIMARY KEY, started_at INTEGER NOT NULL)")
        }
        migrator.registerMigration("2026-11-28-team-members") { db in
            // Developers of a team (`DeveloperStore.addTeamMember`).
            try db.execute(
                sql: """
                    CREATE TABLE team_members (
                        team_id TEXT NOT NULL REFERENCES teams(team_id),
                        account_id TEXT NOT NULL REFERENCES accounts(id),
                        PRIMARY KEY (team_id, account_id)
                    );
                    CREATE INDEX team_members_by_account ON team_members (account_id);
                    """)
        }
        migrator.registerMigration("2026-11-28-token-origins") { db in
            // The web origins whose pages may use a token, one a line; empty: any.
            try db.execute(sql: "ALTER TABLE api_tokens ADD COLUMN allowed_origins TEXT NOT NULL DEFAULT ''")
        }
        migrator.registerMigration("2026-11-29-record-history") { db in
            // Each record's latest versions: who changed it, from which device, what (`RecordVersionNote`).
            try db.execute(
                sql: """
                    CREATE TABLE record_history (
                        zone_id INTEGER NOT NULL REFERENCES zones(id),
                        key TEXT NOT NULL,
                        sequence INTEGER NOT NULL,
                        note BLOB NOT NULL,
                        PRIMARY KEY (zone_id, key, sequence)
                    ) WITHOUT ROWID
                    """)
        }
        return migrator
    }
}

extension SQLiteStore {
    /// Creates a database as an earlier Nimbus left it, migrated up to `migration`, for tests of upgrades.
    package static func simulateOlderVersion(path: String, migratedUpTo migration: String) throws {
        let queue = try DatabaseQueue(path: path)
        try migrator.migrate(queue, upTo: migration)
        try queue.close()
    }

    /// Marks a database as migrated by a later Nimbus, for tests of the refusal to open it.
    package static func simulateNewerVersion(path: String, migration: String) throws {
        let store = try SQLiteStore(path: path)
        try store.pool.write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES (?)", arguments: [migration])
        }
    }
}
