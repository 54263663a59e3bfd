import Foundation

/// The files of an embedded data directory, named in one place: the server opens them, backups copy them.
package struct EmbeddedDataDirectory: Sendable {
    package let url: URL

    package init(_ url: URL) { self.url = url }

    package var database: URL { url.appendingPathComponent("nimbus.sqlite") }
    package var blobs: URL { url.appendingPathComponent("blobs") }
    /// The key that signs asset download URLs, created on first start.
    package var urlSigningKey: URL { url.appendingPathComponent("url-signing.key") }
    /// Where backups taken before a migration go when no other place is configured.
    package var migrationBackups: URL { url.appendingPathComponent("backups") }

    /// Files other than the database and blobs a backup carries.
    var otherFiles: [URL] { [urlSigningKey] }
}
