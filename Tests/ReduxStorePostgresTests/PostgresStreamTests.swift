import ReduxStorePostgres
import Testing

@Suite("Connection strings")
struct PostgresStreamTests {
    @Test("a URL: user, password, host, port, database, parameters, percent-encoding")
    func url() throws {
        let stream = try PostgresStream(
            connection: "postgresql://app%40corp:p%3Ass@db.example:6543/orders?sslmode=require&application_name=x",
            stream: "orders")
        #expect(stream.user == "app@corp")
        #expect(stream.host == "db.example")
        #expect(stream.port == 6543)
        #expect(stream.database == "orders")
        #expect(stream.tls == .require)
        #expect(stream.schema == "reduxstore")
        #expect(stream.applicationName == "x")
        #expect(!stream.description.contains("p:ss"))
        #expect(stream.description.contains("app@corp@db.example:6543/orders"))

        let v6 = try PostgresStream(connection: "postgres://u@[::1]:5433/d", stream: "s")
        #expect(v6.host == "::1")
        #expect(v6.port == 5433)
        let socket = try PostgresStream(connection: "postgres://u@/d?host=/run/pg&port=5999", stream: "s")
        #expect(socket.host == "/run/pg")
        #expect(socket.port == 5999)
    }

    @Test("key=value strings, quoted values")
    func keywords() throws {
        let stream = try PostgresStream(
            connection: "host=127.0.0.1 port=5433 user=me password='a b\\'c' dbname=app sslmode=disable",
            stream: "s", schema: "my schema")
        #expect(stream.host == "127.0.0.1")
        #expect(stream.port == 5433)
        #expect(stream.user == "me")
        #expect(stream.database == "app")
        #expect(stream.tls == .disable)
        #expect(stream.trustedRoots == nil)
        #expect(stream.schema == "my schema")
        let verified = try PostgresStream(
            connection: "host=db sslmode=verify-full sslrootcert='/etc/app/root ca.pem'", stream: "s")
        #expect(verified.tls == .verifyFull)
        #expect(verified.trustedRoots == "/etc/app/root ca.pem")
    }

    @Test("what it cannot read is an error naming it, never quoting the password")
    func errors() {
        let cases: [(String, String)] = [
            ("postgres://u:secret%zz@h/d", "password"),
            ("postgres://u:secret@h:notaport/d", "port"),
            ("postgres://u:secret@h/d?sslmode=sometimes", "sslmode"),
            ("postgres://u:secret@h/d?colour=blue", "unknown parameter"),
            ("host=h password='secret", "closing quote"),
            ("host", "=value"),
            ("host=h flavour=x", "unknown keyword"),
        ]
        for (text, word) in cases {
            do {
                _ = try PostgresStream(connection: text, stream: "s")
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.kind == .invalidArgument)
                #expect(error.description.contains(word), "\(error)")
                #expect(!error.description.contains("secret"), "\(error)")
            }
        }
    }

    @Test("a malformed string puts pieces of the password where other parts go: no error quotes any", arguments: [
        "postgres://app:Zq7w/x9@db/app",        // the password's start read as the port
        "postgres://app:Zq7w?x9=k@db/app",      // its end read as a parameter
        "postgres://app:Zq7w?x9@db/app",        // a parameter without a value
        "postgres://app:Zq7w@db:x9Zq/app",
        "host=db password=Zq7w x9Zq",           // its second word read as a keyword
        "host=db password=Zq7w x9Zq=1",
        "host=db password='Zq7w x9Zq",
        "host=db port=Zq7w",
        "host=db sslmode=Zq7w",
    ])
    func passwordPieces(connection: String) {
        do {
            _ = try PostgresStream(connection: connection, stream: "s")
            Issue.record("accepted: \(connection)")
        } catch {
            #expect(error.kind == .invalidArgument)
            for piece in ["Zq7w", "x9", "Zq"] {
                #expect(!error.description.contains(piece), "\(error)")
            }
        }
    }

    @Test("names that are empty, too long or PostgreSQL's own are refused")
    func names() throws {
        #expect(throws: ReplicationError.self) { try PostgresStream(connection: "host=h", stream: "") }
        let nul = #expect(throws: ReplicationError.self) { try PostgresStream(connection: "host=h", stream: "a\u{0}b") }
        #expect(nul?.kind == .invalidArgument)
        #expect(nul?.description.utf8.contains(0) == false)
        #expect(throws: ReplicationError.self) { try PostgresStream(connection: "host=h", stream: "s", schema: "") }
        #expect(throws: ReplicationError.self) {
            try PostgresStream(connection: "host=h", stream: "s", schema: String(repeating: "s", count: 64))
        }
        for reserved in ["pg_catalog", "pg_mine"] {
            let error = #expect(throws: ReplicationError.self) {
                try PostgresStream(connection: "host=h", stream: "s", schema: reserved)
            }
            #expect(error?.kind == .invalidArgument)
            #expect(error?.message.contains("pg_") == true)
        }
        _ = try PostgresStream(connection: "host=h", stream: "s", schema: "Pg_mine is fine")
    }
}
