// probe: node reads PID 1's environment, writes system dirs, reaches the harness's TCP/UDP ports, lists interfaces, mounts
// lang: node
const fs = require("fs"), net = require("net"), os = require("os"), dgram = require("dgram");
const cp = require("child_process");
const wins = [], notes = [];
try {
  const env = fs.readFileSync("/proc/1/environ", "latin1");
  if (/KEY=|TOKEN=|SECRET=|CANARY/i.test(env)) wins.push("/proc/1/environ has secrets");
} catch (e) { notes.push("environ:" + e.code); }
// new files are created and removed at once; existing ones are only opened for writing, never written,
// so that a failed wall costs a red test and not a changed host
for (const p of ["/usr/lib/corral-x", "/etc/corral-x", "/corral-x"]) {
  try { fs.writeFileSync(p, "x", { flag: "wx" }); fs.unlinkSync(p); wins.push("created " + p); }
  catch (e) { notes.push(p + ":" + e.code); }
}
for (const p of ["/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger", "/usr/bin/env", "/etc/passwd"]) {
  try { fs.closeSync(fs.openSync(p, "r+")); wins.push("writable " + p); } catch (e) { notes.push(p + ":" + e.code); }
}
const ifs = Object.keys(os.networkInterfaces()).sort();
if (ifs.join(",") !== "lo") wins.push("interfaces " + ifs);
const secretish = Object.keys(process.env).filter(k => /KEY|TOKEN|SECRET|PASSWORD|CANARY/i.test(k));
if (secretish.length) wins.push("env " + secretish);
const m = cp.spawnSync("mount", ["-t", "tmpfs", "none", "/tmp"], { stdio: "ignore" });
if (m.status === 0) wins.push("mount");
const port = parseInt(process.env.CORRAL_HOST_PORT || "0", 10);
const udp = parseInt(process.env.CORRAL_HOST_UDP_PORT || "0", 10);
if (!port) notes.push("no CORRAL_HOST_PORT given");
if (udp) {
  const u = dgram.createSocket("udp4");
  u.on("error", () => {});
  u.send("PROBE-UDP-NODE", udp, "127.0.0.1", () => u.close());
}
let pending = port ? 1 : 0;
function done() {
  if (--pending > 0) return;
  console.log(wins.length ? "ESCAPED" : "CONTAINED", JSON.stringify(wins), JSON.stringify(notes));
}
if (port) {
  const s = net.connect({ host: "127.0.0.1", port, timeout: 800 });
  s.on("connect", () => { wins.push("tcp:" + port); s.destroy(); done(); });
  s.on("error", (e) => { notes.push("tcp:" + e.code); done(); });
  s.on("timeout", () => { notes.push("tcp:timeout"); s.destroy(); done(); });
} else {
  pending = 1; done();
}
