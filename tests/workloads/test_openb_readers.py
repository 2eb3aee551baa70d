"""Readers of the Alibaba GPU-sharing trace ("openb"): the shipped files, both pod-list
forms, the node list, and every kind of bad input with its file, line and field."""

from __future__ import annotations

import pytest

from gpushare_env.workloads import TraceError
from gpushare_env.workloads.openb import (
    OpenbNode,
    OpenbTask,
    alibaba_openb_nodes,
    node_models,
    read_openb_nodes,
    read_openb_pods,
    shipped_pod_list_path,
)

LONG_HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
)
SHORT_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model\n"


def _write(tmp_path, text, name="pods.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_shipped_cluster_is_the_papers():
    nodes = alibaba_openb_nodes()
    assert len(nodes) == 1213
    assert sum(node.num_gpu for node in nodes) == 6212
    by_model: dict[str, int] = {}
    for node in nodes:
        by_model[node.model] = by_model.get(node.model, 0) + node.num_gpu
    # G2 549 x 8; T4 387 x 2 + 17 x 4; P100 131 x 2 + 3 x 1; G3 39 x 8;
    # V100M16 28 x 4 + 19 x 1 + 8 x 8; V100M32 21 x 8 + 9 x 4; A10 2 x 1
    assert by_model == {
        "G2": 4392,
        "T4": 842,
        "P100": 265,
        "G3": 312,
        "V100M16": 195,
        "V100M32": 204,
        "A10": 2,
    }
    assert nodes[0] == OpenbNode("openb-node-0000", 64000, 262144, 2, "P100", line=2)


def test_the_shipped_default_pod_list_reads_whole():
    models = node_models(alibaba_openb_nodes())
    tasks = read_openb_pods(shipped_pod_list_path(), known_models=models)
    assert len(tasks) == 8152
    assert sum(task.num_gpu == 0 for task in tasks) == 1088
    assert sum(task.is_gpu_share for task in tasks) == 3078
    assert sum(task.num_gpu == 8 for task in tasks) == 44
    assert sum(task.scheduled_time is None for task in tasks) == 897
    assert sum(task.total_gpu_milli for task in tasks) == 6_086_800


def test_reads_the_long_form(tmp_path):
    path = _write(
        tmp_path,
        LONG_HEADER + "p0,12000,16384,1,1000,,LS,Running,0,12537496,0\n"
        "\n"  # blank lines are ignored
        "p1,6000,12288,1,460,V100M16|V100M32,BE,Pending,427061,12902960,\n"
        "p2,88000,327680,8,1000,,Burstable,Succeeded,5,9,7\n"
        "p3,4000,100,0,0,,LS,Running,1,,1\n",
    )
    tasks = read_openb_pods(path, known_models={"V100M16", "V100M32", "T4"})
    assert tasks == [
        OpenbTask("p0", 12000, 16384, 1, 1000, (), "LS", "Running", 0, 12537496, 0, line=2),
        OpenbTask(
            "p1",
            6000,
            12288,
            1,
            460,
            ("V100M16", "V100M32"),
            "BE",
            "Pending",
            427061,
            12902960,
            None,
            line=4,
        ),
        OpenbTask("p2", 88000, 327680, 8, 1000, (), "Burstable", "Succeeded", 5, 9, 7, line=5),
        OpenbTask("p3", 4000, 100, 0, 0, (), "LS", "Running", 1, None, 1, line=6),
    ]
    assert [task.total_gpu_milli for task in tasks] == [1000, 460, 8000, 0]
    assert [task.is_gpu_share for task in tasks] == [False, True, False, False]


def test_reads_the_short_multigpu_form(tmp_path):
    path = _write(tmp_path, SHORT_HEADER + "a,1000,10,2,1000\nb,500,0,1,230\n")
    tasks = read_openb_pods(path)
    assert tasks == [
        OpenbTask("a", 1000, 10, 2, 1000, line=2),
        OpenbTask("b", 500, 0, 1, 230, line=3),
    ]
    assert tasks[0].creation_time is None and tasks[0].qos == ""


def test_reads_a_node_list_with_cpu_nodes(tmp_path):
    path = _write(tmp_path, NODE_HEADER + "n0,32000,262144,0,\nn1,96000,786432,8,V100M32\n")
    nodes = read_openb_nodes(path)
    assert nodes == [
        OpenbNode("n0", 32000, 262144, 0, "", line=2),
        OpenbNode("n1", 96000, 786432, 8, "V100M32", line=3),
    ]
    assert node_models(nodes) == {"V100M32"}


def _error(reader, path, **kwargs) -> TraceError:
    with pytest.raises(TraceError) as caught:
        reader(path, **kwargs)
    return caught.value


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("p,1000,10,1,1001", "gpu_milli", "0-1000"),  # share above 1000
        ("p,1000,10,1,-5", "gpu_milli", "0-1000"),  # share below 0
        ("p,1000,10,2,500", "gpu_milli", "whole"),  # multi-GPU task with a fraction
        ("p,1000,10,1,0", "gpu_milli", "share > 0"),  # a GPU task without a share
        ("p,1000,10,0,300", "gpu_milli", "without GPUs"),  # a share without a GPU
        ("p,1000,ten,1,500", "memory_mib", "integer"),  # non-numeric
        ("p,1.5,10,1,500", "cpu_milli", "integer"),  # not an integer
        ("p,,10,1,500", "cpu_milli", "empty"),  # missing
        ("p,-1,10,1,500", "cpu_milli", ">= 0"),  # negative
        ("p,1000,10,-1,500", "num_gpu", ">= 0"),
        (",1000,10,1,500", "name", "empty"),
        ("p,1000,10,1", "row", "5 cells"),
    ],
)
def test_bad_pod_rows_name_file_line_and_field(tmp_path, row, field, words):
    path = _write(tmp_path, SHORT_HEADER + "ok,1,1,1,1000\n" + row + "\n")
    error = _error(read_openb_pods, path)
    assert (error.path, error.line, error.field) == (str(path), 3, field)
    message = str(error)
    assert str(path) in message and "line 3" in message and repr(field) in message
    assert words in message


def test_an_unknown_gpu_model_is_an_error_against_the_clusters_models(tmp_path):
    path = _write(tmp_path, LONG_HEADER + "p,1000,10,1,500,T4|H100,LS,Running,0,1,0\n")
    error = _error(read_openb_pods, path, known_models={"T4", "G2"})
    assert (error.line, error.field) == (2, "gpu_spec")
    assert "'H100'" in str(error) and "G2, T4" in str(error)
    # without the cluster's models the spec is kept as written
    assert read_openb_pods(path)[0].gpu_spec == ("T4", "H100")


def test_a_cpu_task_cannot_ask_for_gpu_models(tmp_path):
    path = _write(tmp_path, LONG_HEADER + "p,1000,10,0,0,T4,LS,Running,0,1,0\n")
    assert _error(read_openb_pods, path).field == "gpu_spec"


def test_duplicate_task_names_are_an_error(tmp_path):
    path = _write(tmp_path, SHORT_HEADER + "p,1,1,0,0\np,1,1,0,0\n")
    error = _error(read_openb_pods, path)
    assert (error.line, error.field) == (3, "name") and "duplicate" in str(error)


@pytest.mark.parametrize(
    "header",
    [
        "name,cpu_milli,memory_mib,num_gpu\n",  # a column short
        "name,cpu,memory_mib,num_gpu,gpu_milli\n",  # a wrong name
        NODE_HEADER,  # a node list given as a pod list
        "",  # empty file
    ],
)
def test_a_wrong_pod_header_is_an_error(tmp_path, header):
    path = _write(tmp_path, header + ("p,1,1,0,0\n" if header else ""))
    error = _error(read_openb_pods, path)
    assert (error.line, error.field) == (1, "header")
    assert "header" in str(error) and "line 1" in str(error)


@pytest.mark.parametrize(
    ("row", "field", "words"),
    [
        ("n,,1024,2,T4", "cpu_milli", "empty"),  # a node without capacities
        ("n,1000,,2,T4", "memory_mib", "empty"),
        ("n,0,1024,2,T4", "cpu_milli", "capacity > 0"),
        ("n,1000,0,2,T4", "memory_mib", "capacity > 0"),
        ("n,1000,1024,x,T4", "gpu", "integer"),
        ("n,1000,1024,2,", "model", "needs a model"),
        ("n,1000,1024,0,T4", "model", "without GPUs"),
    ],
)
def test_bad_node_rows_name_file_line_and_field(tmp_path, row, field, words):
    path = _write(tmp_path, NODE_HEADER + "ok,1000,1024,1,T4\n" + row + "\n", name="nodes.csv")
    error = _error(read_openb_nodes, path)
    assert (error.path, error.line, error.field) == (str(path), 3, field)
    assert str(path) in str(error) and "line 3" in str(error) and words in str(error)


def test_a_pod_list_given_as_a_node_list_is_an_error(tmp_path):
    path = _write(tmp_path, SHORT_HEADER + "p,1,1,0,0\n")
    assert _error(read_openb_nodes, path).field == "header"
