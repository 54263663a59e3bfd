import NimbusPostgres
import Testing

/// Database URLs as libpq writes them, with one server or several (a primary and its standbys).
@Suite struct PostgresLocationTests {
    @Test func aURLWithOneServerNamesItsPartsAndDefaults() throws {
        let location = try PostgresLocation(url: "postgres://ann:s%40cret@db.example.com:6543/nimbus?sslmode=require")
        #expect(location.servers == [.init(host: "db.example.com", port: 6543)])
        #expect(location.user == "ann" && location.password == "s@cret" && location.database == "nimbus")
        #expect(location.tls == .require && location.sessionAttributes == .any)
        #expect(location.description == "postgres://ann@db.example.com:6543/nimbus", "the password is never shown")
        let defaults = try PostgresLocation(url: "postgresql://ann@/nimbus")
        #expect(defaults.servers == [.init(host: "127.0.0.1", port: 5432)] && defaults.tls == .prefer)
    }

    @Test func aURLWithSeveralServersKeepsTheirOrderAndTheirPorts() throws {
        let location = try PostgresLocation(
            url: "postgres://ann:pw@db1:5433,db2,[::1]:5434/nimbus?target_session_attrs=read-write&sslmode=disable")
        #expect(
            location.servers == [
                .init(host: "db1", port: 5433), .init(host: "db2", port: 5432), .init(host: "::1", port: 5434),
            ])
        #expect(location.user == "ann" && location.password == "pw" && location.database == "nimbus")
        #expect(location.sessionAttributes == .readWrite && location.tls == .disable)
        #expect(
            location.description == "postgres://ann@db1:5433,db2:5432,[::1]:5434/nimbus?target_session_attrs=read-write")
        var reread = try PostgresLocation(url: location.description + "&sslmode=disable")
        reread.password = "pw"
        #expect(reread == location, "what a log shows names the same servers")
    }

    @Test(arguments: [
        "postgres://ann@db1:5432,/nimbus",
        "postgres://ann@db1:notaport/nimbus",
        "postgres://ann@db1:70000/nimbus",
        "postgres://ann@[::1/nimbus",
        "postgres://ann@db1,db2/nimbus?target_session_attrs=primary",
        "postgres://ann@db1,db2/nimbus?host=/run/postgresql",
        "postgres://ann@db1,db2/",
        "mysql://ann@db1/nimbus",
    ])
    func badURLsAreRefusedWithAReason(url: String) {
        #expect(throws: PostgresLocation.InvalidURL.self) { try PostgresLocation(url: url) }
    }
}
