"""Reads examples/kubernetes/*.yaml and writes what modelpin's own tools check into OUT:
the workloads' containers, mounts and volumes and every ConfigMap's keys (workloads.json, for the
test's checks against project.Dockerfile), both workloads changed to README.md's ConfigMap route
as it says (configmap-route.yaml, for the schema check) and the PrometheusRule's groups
(rules.yml); checks that
the PrometheusRule holds examples/prometheus-rules.yml's groups unchanged and that every Service
and the ServiceMonitor agree on the port, and that the workloads probe /healthz.
Prints one line per fact checked; exits 1 naming the first that does not hold."""

import copy
import json
import pathlib
import sys
import textwrap

import yaml

examples, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])


def fail(why):
    print(f"error: {why}", file=sys.stderr)
    sys.exit(1)


docs = {}
for name in ("fleet", "single", "monitoring"):
    docs[name] = [d for d in yaml.safe_load_all((examples / "kubernetes" / f"{name}.yaml").read_text()) if d]

facts = {"workloads": [], "configmaps": []}
for name in docs:
    for config in (d for d in docs[name] if d["kind"] == "ConfigMap"):
        keys = sorted({**config.get("data", {}), **config.get("binaryData", {})})
        facts["configmaps"].append({"file": f"{name}.yaml", "name": config["metadata"]["name"], "keys": keys})
for name in ("fleet", "single"):
    for workload in (d for d in docs[name] if d["kind"] in ("Deployment", "StatefulSet")):
        spec = workload["spec"]
        pod = spec["template"]["spec"]
        if len(pod["containers"]) != 1 or pod.get("initContainers"):
            fail(f"{name}.yaml: {workload['kind']} runs one container, no init containers")
        container = pod["containers"][0]
        for probe in ("livenessProbe", "readinessProbe"):
            if container[probe]["httpGet"]["path"] != "/healthz":
                fail(f"{name}.yaml: {workload['kind']} {probe} is not /healthz")
        print(f"{name}.yaml: {workload['kind']} replicas={spec['replicas']} probes=/healthz")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        for claim in spec.get("volumeClaimTemplates", []):
            volumes[claim["metadata"]["name"]] = {"name": claim["metadata"]["name"], "persistentVolumeClaim": {}}
        mounts = []
        for mount in container.get("volumeMounts", []):
            source = {k: v for k, v in volumes[mount["name"]].items() if k != "name"}
            mounts.append({"mountPath": mount["mountPath"], "subPath": mount.get("subPath"), "source": source})
        facts["workloads"].append({
            "file": f"{name}.yaml",
            "kind": workload["kind"],
            "image": container["image"],
            "args": container.get("command", []) + container.get("args", []),
            "workingDir": container.get("workingDir"),
            "runAsUser": container.get("securityContext", {}).get("runAsUser", pod.get("securityContext", {}).get("runAsUser")),
            "readOnlyRootFilesystem": container["securityContext"].get("readOnlyRootFilesystem", False),
            "mounts": mounts,
        })
(out / "workloads.json").write_text(json.dumps(facts, indent=2))

readme = (examples / "kubernetes" / "README.md").read_text()
blocks = readme.split("```yaml\n")
if len(blocks) != 2:
    fail("README.md: one yaml block, the ConfigMap route")
route = yaml.safe_load(textwrap.dedent(blocks[1].split("```", 1)[0]))
changed = []
for name in ("fleet", "single"):
    for workload in (d for d in docs[name] if d["kind"] in ("Deployment", "StatefulSet")):
        workload = copy.deepcopy(workload)
        pod = workload["spec"]["template"]["spec"]
        container, given = pod["containers"][0], route["containers"][0]
        if given["name"] != container["name"] or given["args"] != container["args"]:
            fail(f"README.md: the ConfigMap route runs another container than {name}.yaml")
        container["image"] = given["image"]
        container["volumeMounts"] = given["volumeMounts"] + container.get("volumeMounts", [])
        pod["volumes"] = route["volumes"] + pod.get("volumes", [])
        changed.append(workload)
(out / "configmap-route.yaml").write_text(yaml.safe_dump_all(changed))
print(f"README.md: the ConfigMap route applied to {len(changed)} workloads")

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
