"""Reads examples/kubernetes/*.yaml and writes what modelpin's own tools check into OUT:
each ConfigMap's pins.toml (as <file>.pins.toml) and the PrometheusRule's groups (rules.yml);
checks that the PrometheusRule holds examples/prometheus-rules.yml's groups unchanged and that
every Service and the ServiceMonitor agree on the port, and that the workloads probe /healthz.
Prints one line per fact checked; exits 1 naming the first that does not hold."""

import pathlib
import sys

import yaml

examples, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])


def fail(why):
    print(f"error: {why}", file=sys.stderr)
    sys.exit(1)


docs = {}
for name in ("fleet", "single", "monitoring"):
    docs[name] = [d for d in yaml.safe_load_all((examples / "kubernetes" / f"{name}.yaml").read_text()) if d]

for name in ("fleet", "single"):
    maps = [d for d in docs[name] if d["kind"] == "ConfigMap"]
    if len(maps) != 1 or "pins.toml" not in maps[0]["data"]:
        fail(f"{name}.yaml: one ConfigMap holding pins.toml")
    (out / f"{name}.pins.toml").write_text(maps[0]["data"]["pins.toml"])
    for workload in (d for d in docs[name] if d["kind"] in ("Deployment", "StatefulSet")):
        spec = workload["spec"]
        container = spec["template"]["spec"]["containers"][0]
        for probe in ("livenessProbe", "readinessProbe"):
            if container[probe]["httpGet"]["path"] != "/healthz":
                fail(f"{name}.yaml: {workload['kind']} {probe} is not /healthz")
        print(f"{name}.yaml: {workload['kind']} replicas={spec['replicas']} probes=/healthz")

rule = [d for d in docs["monitoring"] if d["kind"] == "PrometheusRule"]
shipped = yaml.safe_load((examples / "prometheus-rules.yml").read_text())
if len(rule) != 1 or rule[0]["spec"]["groups"] != shipped["groups"]:
    fail("monitoring.yaml: the PrometheusRule's groups differ from examples/prometheus-rules.yml")
(out / "rules.yml").write_text(yaml.safe_dump({"groups": rule[0]["spec"]["groups"]}))
print(f"monitoring.yaml: PrometheusRule = prometheus-rules.yml ({sum(len(g['rules']) for g in shipped['groups'])} rules)")

monitor = [d for d in docs["monitoring"] if d["kind"] == "ServiceMonitor"][0]
wanted = set(monitor["spec"]["selector"]["matchExpressions"][0]["values"])
port = monitor["spec"]["endpoints"][0]["port"]
for name in ("fleet", "single"):
    for service in (d for d in docs[name] if d["kind"] == "Service"):
        label = service["metadata"]["labels"]["app.kubernetes.io/name"]
        names = [p["name"] for p in service["spec"]["ports"]]
        if label not in wanted or port not in names:
            fail(f"{name}.yaml: the ServiceMonitor does not scrape Service {service['metadata']['name']}")
        print(f"{name}.yaml: Service {service['metadata']['name']} scraped on port {port}")
