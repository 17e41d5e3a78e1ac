"""Separate hosts on one machine, for tests: one network namespace per host.

Each host gets its own namespace, named PREFIX-<host>, with one interface
(eth0) that has its own address in a private /24 and is joined by a veth
pair to a bridge in a further namespace, PREFIX-switch. Every host's
/etc/hosts (through `ip netns exec`'s /etc/netns/<namespace>/hosts) names
all of them, so TF_CONFIG can say "ps0:2222". Nothing outside the
namespaces the harness made is touched, and stop() removes them all.

Faults are iptables rules inside a host's namespace (the kernel here has
no netem): block(a, b) drops every packet between hosts a and b, and
lose(p) drops a fraction p of the packets every host receives. Added
latency is a user-space proxy on a host (delay_proxy.py, started by
delay()), in front of a server that listens on the host's loopback.

Needs root, ip (iproute2), unshare and iptables; available() says why not.
"""

import os
import random
import shutil
import subprocess
import sys

COMMAND_TIMEOUT = 30
DELAY_PROXY = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           "delay_proxy.py")
ETC_NETNS = "/etc/netns"


def _run(argv, check=True):
    result = subprocess.run(argv, capture_output=True, text=True,
                            timeout=COMMAND_TIMEOUT)
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {result.returncode}: "
                           f"{result.stderr.strip()}")
    return result


def available():
    """None when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("/usr/sbin/ip", "/usr/bin/unshare"):
        if not os.access(tool, os.X_OK):
            return f"{tool} is missing"
    if shutil.which("iptables") is None and not os.access(
            "/usr/sbin/iptables", os.X_OK):
        return "iptables is missing (tools/setup.sh installs it)"
    probe = f"distrt-probe-{os.getpid()}"
    result = _run(["ip", "netns", "add", probe], check=False)
    if result.returncode != 0:
        return f"ip netns add failed: {result.stderr.strip()}"
    _run(["ip", "netns", "del", probe], check=False)
    return None


class NetnsHosts:
    """Hosts named `names`, each in a network namespace of its own."""

    def __init__(self, names):
        self.names = list(names)
        # Unique per run, short enough for interface and namespace names.
        self.prefix = f"dt{os.getpid() % 100000}{random.randrange(100):02d}"
        # A /24 in 10.0.0.0/8 that exists only inside these namespaces.
        self.subnet = f"10.{random.randrange(64, 250)}.{random.randrange(256)}"
        self.address = {name: f"{self.subnet}.{10 + i}"
                        for i, name in enumerate(self.names)}
        self.switch = f"{self.prefix}-switch"
        self.made = []  # namespaces, for stop()
        self.proxies = []  # delay_proxy.py processes, for stop()

    def namespace(self, name):
        return f"{self.prefix}-{name}"

    def start(self):
        _run(["ip", "netns", "add", self.switch])
        self.made.append(self.switch)
        self._in(self.switch, "ip", "link", "set", "lo", "up")
        self._in(self.switch, "ip", "link", "add", "br0", "type", "bridge")
        self._in(self.switch, "ip", "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n::1 localhost\n" + "".join(
            f"{address} {name}\n" for name, address in self.address.items())
        for i, name in enumerate(self.names):
            namespace = self.namespace(name)
            _run(["ip", "netns", "add", namespace])
            self.made.append(namespace)
            os.makedirs(os.path.join(ETC_NETNS, namespace), exist_ok=True)
            with open(os.path.join(ETC_NETNS, namespace, "hosts"), "w") as f:
                f.write(hosts_file)
            port = f"p{i}"
            self._in(self.switch, "ip", "link", "add", port, "type", "veth",
                     "peer", "name", "eth0", "netns", namespace)
            self._in(self.switch, "ip", "link", "set", port, "master", "br0")
            self._in(self.switch, "ip", "link", "set", port, "up")
            self._in(namespace, "ip", "link", "set", "lo", "up")
            self._in(namespace, "ip", "addr", "add",
                     f"{self.address[name]}/24", "dev", "eth0")
            self._in(namespace, "ip", "link", "set", "eth0", "up")

    def stop(self):
        """Stops its delay proxies and removes every namespace it made
        (their other processes must be gone) and their /etc/netns files."""
        errors = []
        for proxy in self.proxies:
            proxy.terminate()
            try:
                proxy.wait(timeout=COMMAND_TIMEOUT)
            except subprocess.TimeoutExpired:
                proxy.kill()
                proxy.wait(timeout=COMMAND_TIMEOUT)
            proxy.stdout.close()
        self.proxies = []
        for namespace in reversed(self.made):
            result = _run(["ip", "netns", "del", namespace], check=False)
            if result.returncode != 0:
                errors.append(result.stderr.strip())
            shutil.rmtree(os.path.join(ETC_NETNS, namespace),
                          ignore_errors=True)
        self.made = []
        try:
            os.rmdir(ETC_NETNS)  # only when nothing else uses it
        except OSError:
            pass
        if errors:
            raise RuntimeError("; ".join(errors))

    def _in(self, namespace, *argv):
        return _run(["ip", "netns", "exec", namespace, *argv])

    def run_in(self, name, argv, check=True):
        """Runs argv on host `name`, waiting for it (bounded)."""
        return _run(["ip", "netns", "exec", self.namespace(name), *argv],
                    check=check)

    def _rules(self, action, a, b):
        for here, there in ((a, b), (b, a)):
            self._in(self.namespace(here), "iptables", action, "INPUT", "-s",
                     self.address[there], "-j", "DROP")
            self._in(self.namespace(here), "iptables", action, "OUTPUT", "-d",
                     self.address[there], "-j", "DROP")

    def block(self, a, b):
        """Drops every packet between hosts a and b, both ways."""
        self._rules("-A", a, b)

    def unblock(self, a, b):
        self._rules("-D", a, b)

    def lose(self, probability):
        """Every host drops `probability` of the packets it receives."""
        for name in self.names:
            self._in(self.namespace(name), "iptables", "-A", "INPUT", "-i",
                     "eth0", "-m", "statistic", "--mode", "random",
                     "--probability", str(probability), "-j", "DROP")

    def delay(self, name, port, to_port, delay_ms):
        """Adds `delay_ms` of latency each way to host `name`'s port: a
        delay proxy there listens on the host's address and `port`, and
        forwards to `to_port` on the host's loopback, where the real server
        must listen. Returns once the proxy accepts connections."""
        proxy = subprocess.Popen(
            ["ip", "netns", "exec", self.namespace(name), sys.executable,
             DELAY_PROXY, f"--listen={self.address[name]}:{port}",
             f"--to=127.0.0.1:{to_port}", f"--delay_ms={delay_ms}"],
            stdout=subprocess.PIPE, text=True)
        self.proxies.append(proxy)
        line = proxy.stdout.readline()  # ends when the proxy exits
        if not line.startswith("delay_proxy: listening"):
            raise RuntimeError(f"the delay proxy on {name} did not start "
                               f"(exit status {proxy.wait(COMMAND_TIMEOUT)})")

    def wrapper(self, directory, real_binary, task_script, flags=()):
        """A script that `launch` can start as --ps_server_bin or
        --worker_bin: task_script runs real_binary on the task's host, with
        `flags` after launch's own (so they win)."""
        path = os.path.join(directory,
                            "on-host-" + os.path.basename(real_binary))
        extra = "".join(f" '{flag}'" for flag in flags)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n"
                    f"exec '{task_script}' '{os.path.abspath(real_binary)}' "
                    f'"$@"{extra}\n')
        os.chmod(path, 0o755)
        return path
