//! The forwarder against two plain TCP servers that greet with their name and echo.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use pgmill_testdb::Forwarder;

/// A server on a free port that writes `name` and a newline to each connection, then echoes
/// lines; it serves until the test process ends.
fn server(name: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut out = conn.try_clone().unwrap();
                if writeln!(out, "{name}").is_err() {
                    return;
                }
                for line in BufReader::new(conn).lines() {
                    let Ok(line) = line else { return };
                    if writeln!(out, "{line}").is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

fn connect(port: u16) -> (BufReader<TcpStream>, TcpStream) {
    let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    (BufReader::new(stream.try_clone().unwrap()), stream)
}

fn read_line(reader: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    line.trim_end().to_owned()
}

#[test]
fn switching_drops_open_connections_and_sends_new_ones_to_the_new_target() {
    let (a, b) = (server("a"), server("b"));
    let forwarder = Forwarder::start(a).unwrap();
    assert_eq!(forwarder.target(), a);

    let (mut reader, mut writer) = connect(forwarder.port());
    assert_eq!(read_line(&mut reader), "a");
    writeln!(writer, "hello").unwrap();
    assert_eq!(read_line(&mut reader), "hello", "bytes flow both ways");
    assert_eq!(forwarder.open_connections(), 1);

    forwarder.switch_to(b);
    assert_eq!(forwarder.target(), b);
    // The open connection is closed: end of stream (or a reset), never an answer from b.
    let mut rest = String::new();
    let ended = match reader.read_line(&mut rest) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    };
    assert!(ended, "the open connection survived the switch: {rest:?}");

    let (mut reader, _writer) = connect(forwarder.port());
    assert_eq!(
        read_line(&mut reader),
        "b",
        "a new connection reaches the new target"
    );
}

#[test]
fn a_connection_the_target_refuses_is_closed() {
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let forwarder = Forwarder::start(refused).unwrap();
    let (mut reader, _writer) = connect(forwarder.port());
    let mut line = String::new();
    assert!(matches!(reader.read_line(&mut line), Ok(0) | Err(_)));
    assert_eq!(forwarder.open_connections(), 0);
}

#[test]
fn url_for_keeps_user_database_and_parameters() {
    let forwarder = Forwarder::start(1).unwrap();
    let port = forwarder.port();
    assert_eq!(
        forwarder.url_for("postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"),
        format!("postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable")
    );
    assert_eq!(
        forwarder.url_for("postgres://localhost:5432"),
        format!("postgres://127.0.0.1:{port}")
    );
}
