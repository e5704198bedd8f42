"""The strace log reader of the offline trace test finds what it must (and only that): lines in
strace 6's ``-f -y -qq`` shape."""

from __future__ import annotations

from tests.security.strace_log import calls, dns_names, is_loopback, network_contacts, outside, written_paths

LOG = r"""
101 socket(AF_INET, SOCK_DGRAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 8<socket:[5001]>
101 connect(8<socket:[5001]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.9.8.7")}, 16 <unfinished ...>
102 openat(AT_FDCWD</srv/app>, "notes.txt", O_RDONLY|O_CLOEXEC) = 3</srv/app/notes.txt>
101 <... connect resumed>)            = 0
101 sendmmsg(8<socket:[5001]>, [{msg_hdr={msg_name=NULL, msg_namelen=0, msg_iov=[{iov_base="wc\1\0\0\1\0\0\0\0\0\0\6mobile\6events\4data\tmicrosoft\3com\0\0\1\0\1", iov_len=50}], msg_iovlen=1, msg_controllen=0, msg_flags=0}, msg_len=50}], 1, MSG_NOSIGNAL) = 1
103 connect(9<socket:[5002]>, {sa_family=AF_INET, sin_port=htons(6379), sin_addr=inet_addr("127.0.0.1")}, 16) = 0
103 connect(10<socket:[5003]>, {sa_family=AF_INET6, sin6_port=htons(6379), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "::ffff:127.0.0.1", &sin6_addr), sin6_scope_id=0}, 28) = 0
103 connect(11<socket:[5004]>, {sa_family=AF_INET, sin_port=htons(80), sin_addr=inet_addr("169.254.169.254")}, 16) = -1 EINPROGRESS (Operation now in progress)
103 connect(12<socket:[5005]>, {sa_family=AF_UNIX, sun_path="/tmp/ray/session/sockets/raylet"}, 110) = 0
104 openat(AT_FDCWD</srv/app>, "out/table.parquet.tmp", O_WRONLY|O_CREAT|O_TRUNC|O_CLOEXEC, 0666) = 4</srv/app/out/table.parquet.tmp>
104 renameat2(AT_FDCWD</srv/app>, "out/table.parquet.tmp", AT_FDCWD</srv/app>, "/data/tables/t.parquet", RENAME_NOREPLACE) = 0
104 openat(5</home/u>, ".cache/x/deviceid", O_RDWR|O_CREAT, 0600) = 6</home/u/.cache/x/deviceid>
104 mkdir("/data/media", 0777) = -1 EEXIST (File exists)
104 openat(AT_FDCWD</srv/app>, "/etc/passwd", O_RDONLY|O_CLOEXEC) = 7</etc/passwd>
104 +++ exited with 0 +++
"""


def test_calls_join_unfinished_halves():
    log = list(calls(LOG.splitlines()))
    connect = next(c for c in log if c.name == "connect" and c.pid == 101)
    assert connect.result == "0" and "10.9.8.7" in connect.args


def test_dns_lookups_and_non_loopback_contacts_are_reported_loopback_is_not():
    found = network_contacts(calls(LOG.splitlines()))
    assert found == [
        "pid 101: DNS to 10.9.8.7:53",
        "pid 101: looked up mobile.events.data.microsoft.com",
        "pid 103: connect to 169.254.169.254:80",
    ]


def test_a_lookup_on_a_loopback_resolver_is_still_a_lookup():
    line = '7 connect(3<socket:[1]>, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("127.0.0.53")}, 16) = 0'
    assert network_contacts(calls([line])) == ["pid 7: DNS to 127.0.0.53:53"]


def test_loopback_addresses():
    assert all(is_loopback(a) for a in ("127.0.0.1", "127.8.9.1", "::1", "::ffff:127.0.0.1"))
    assert not any(is_loopback(a) for a in ("192.0.2.2", "::ffff:10.0.0.1", "0.0.0.0", "8.8.8.8", "x"))


def test_dns_names_reads_queries_only():
    assert dns_names(r"\373\25\1\0\0\1\0\0\0\0\0\0\6mobile\6events\4data\tmicrosoft\3com\0\0\1\0\1") == [
        "mobile.events.data.microsoft.com"
    ]
    assert dns_names(r"GET /latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n") == []
    assert dns_names(r"\373\25\201\200\0\1\0\1\0\0\0\0\3one\0\0\1\0\1") == []  # a response


def test_writes_are_resolved_against_their_directory_and_failures_ignored():
    paths = written_paths(calls(LOG.splitlines()))
    assert paths == [
        ("openat", "/srv/app/out/table.parquet.tmp"),
        ("renameat2", "/data/tables/t.parquet"),
        ("openat", "/home/u/.cache/x/deviceid"),
    ]
    assert outside(paths, ["/data/", "/srv/app/out/"]) == ["openat /home/u/.cache/x/deviceid"]
