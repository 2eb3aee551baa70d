"""The measured interference model (``SimConfig.interference = "measured"``): Gavel's pairs
inside the engine, per worker.

Expected speeds are read off the shipped table with ``ColocationTable.normalised`` (Gavel's
V100 pair of two ResNet-50 at batch size 64: 0.498 of solo throughput each; ResNet-50 beside
ResNet-18 at batch size 64: 0.81 and 0.52), so a wrong lookup, a transposed pair or a lost
table fails here.
"""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest

import gpushare_env  # noqa: F401  (registers GPUShare-v0)
from gpushare_env.sim import JobSpec, LinearContention, SimConfig, Simulator, make_cluster
from gpushare_env.sim.gavel import CATALOG_PROXIES, CATALOG_TO_GAVEL, load_colocation
from gpushare_env.sim.interference import GAVEL_GPU, measured_contention
from gpushare_env.sim.view import SimView
from gpushare_env.workloads import thesis_workload

TABLE = load_colocation()
R50 = CATALOG_TO_GAVEL["resnet50"]
R18 = CATALOG_PROXIES["googlenet"]


def resnet(job_id: int, arrival_s: float = 0.0, gpus: int = 1, iterations: int = 1000) -> JobSpec:
    return JobSpec(job_id, arrival_s, "resnet50", 64, gpus, iterations, 8.0, 1.0, 0.158)


def googlenet(job_id: int, arrival_s: float = 0.0, iterations: int = 1000) -> JobSpec:
    return JobSpec(job_id, arrival_s, "googlenet", 64, 1, iterations, 1.8, 0.6, 0.065)


def measured_sim(jobs: list[JobSpec], cluster: str = "tiny", mode: str = "measured") -> Simulator:
    sim = Simulator(jobs, make_cluster(cluster), SimConfig(interference=mode))
    sim.advance()
    return sim


def own(gpu: str, job: str, partner: str) -> float:
    pair = TABLE.normalised(gpu, job, partner)
    assert pair is not None
    return pair.own


def test_two_resnets_run_at_the_measured_pair_speed():
    sim = measured_sim([resnet(0), resnet(1)])
    sim.place(0, [0])
    sim.place(1, [0])
    expected = own("v100", R50, R50)
    assert expected == pytest.approx(0.498, abs=0.002)
    assert sim.jobs[0].speed == pytest.approx(expected, rel=1e-12)
    assert sim.jobs[1].speed == pytest.approx(expected, rel=1e-12)
    assert sim.gpus.factor[0] == pytest.approx(expected, rel=1e-12)
    while not sim.done:
        sim.advance()
    finish = {r.job_id: r.finish_s for r in sim.records()}
    assert finish == pytest.approx({0: 158 / expected, 1: 158 / expected}, rel=1e-9)


def test_a_measured_pair_is_asymmetric():
    # the heavy job keeps 0.81 of its speed beside the light one, the light one 0.52
    sim = measured_sim([resnet(0), googlenet(1)])
    sim.place(0, [0])
    sim.place(1, [0])
    heavy, light = own("v100", R50, R18), own("v100", R18, R50)
    assert heavy == pytest.approx(0.81, abs=0.01) and light == pytest.approx(0.52, abs=0.01)
    assert sim.jobs[0].speed == pytest.approx(heavy, rel=1e-12)
    assert sim.jobs[1].speed == pytest.approx(light, rel=1e-12)
    assert sim.gpus.factor[0] == pytest.approx(min(heavy, light), rel=1e-12)


def test_three_workers_add_their_pairs_extra_times():
    # 32 GiB V100s hold three 8 GiB workers: each runs at 1 / (1 + 2 e), e = 1 / f - 1
    cluster = {"nodes": 1, "gpus_per_node": 1, "gpu_type": "v100_32g"}
    sim = Simulator(
        [resnet(0), resnet(1), resnet(2)], make_cluster(cluster), SimConfig(interference="measured")
    )
    sim.advance()
    for job in range(3):
        sim.place(job, [0])
    e = 1.0 / own("v100", R50, R50) - 1.0
    for job in range(3):
        assert sim.jobs[job].speed == pytest.approx(1.0 / (1.0 + 2.0 * e), rel=1e-12)
    # one leaves: the other two are back at the measured pair
    sim.suspend(2)
    assert sim.jobs[0].speed == pytest.approx(own("v100", R50, R50), rel=1e-12)


def test_solo_speed_per_model_on_a_measured_gpu_type():
    # on a P100, Gavel measured ResNet-50 at 0.596 of its V100 throughput and ResNet-18 at
    # 0.926: one catalog speed (0.57) would give both the same
    cluster = {"nodes": 1, "gpus_per_node": 2, "gpu_type": "p100"}
    sim = Simulator(
        [resnet(0), googlenet(1)], make_cluster(cluster), SimConfig(interference="measured")
    )
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [1])
    solo = {gpu: TABLE.gpu_types[gpu].solo for gpu in ("p100", "v100")}
    assert sim.jobs[0].speed == pytest.approx(solo["p100"][R50] / solo["v100"][R50], rel=1e-12)
    assert sim.jobs[1].speed == pytest.approx(solo["p100"][R18] / solo["v100"][R18], rel=1e-12)
    assert sim.jobs[1].speed > sim.jobs[0].speed + 0.3


def test_an_unmeasured_pair_takes_the_analytic_pair():
    # on a K80 two ResNet-50 could not share in Gavel's runs (0/0): the analytic pair applies
    assert TABLE.normalised("k80", R50, R50) is None
    cluster = {"nodes": 1, "gpus_per_node": 1, "gpu_type": "k80", "memory_gib": 16.0}
    sim = Simulator(
        [resnet(0), resnet(1)], make_cluster(cluster), SimConfig(interference="measured")
    )
    sim.advance()
    sim.place(0, [0])
    sim.place(1, [0])
    k80_speed = TABLE.gpu_types["k80"].solo[R50] / TABLE.gpu_types["v100"].solo[R50]
    assert sim.jobs[0].speed == pytest.approx(0.475 * k80_speed, rel=1e-12)


def test_measured_exact_leaves_unmatched_models_analytic():
    # googlenet has no same-architecture match: beside resnet50 the pair is analytic
    # (U = 1.6: each at 0.95 / 1.6), and alone on a P100 it runs at the catalog speed
    sim = measured_sim([resnet(0), googlenet(1)], mode="measured_exact")
    sim.place(0, [0])
    sim.place(1, [0])
    assert sim.jobs[0].speed == pytest.approx(0.95 / 1.6, rel=1e-12)
    assert sim.jobs[1].speed == pytest.approx(0.95 / 1.6, rel=1e-12)


def workload(seed: int, models: tuple[str, ...]) -> list[JobSpec]:
    return thesis_workload(40, rng=np.random.default_rng(seed), models=models)


def play_fifo_pack(sim: Simulator) -> list[tuple[int, float]]:
    """Place waiting jobs in order with the pack strategy, else advance; the records."""
    while not sim.done:
        for job_id in sim.pending():
            if sim.find_placement(job_id, "pack") is not None:
                sim.schedule(job_id, "pack")
        sim.advance()
    return sorted((r.job_id, r.finish_s) for r in sim.records())


@pytest.mark.parametrize("seed", [0, 1])
def test_measured_exact_without_matched_models_is_the_analytic_model(seed):
    # no resnet50 in the workload: every pair is unmeasured, so every GPU takes the
    # analytic factor, bit for bit
    jobs = workload(seed, ("vgg16", "googlenet", "inception_v3"))
    cluster = make_cluster("thesis")
    runs = [
        play_fifo_pack(Simulator(jobs, cluster, SimConfig(interference=mode)))
        for mode in ("analytic", "measured_exact")
    ]
    assert runs[0] == runs[1]
    # ... while the proxies change it
    measured = play_fifo_pack(Simulator(jobs, cluster, SimConfig(interference="measured")))
    assert measured != runs[0]


def test_speed_if_placed_predicts_what_the_engine_applies():
    sim = measured_sim([resnet(0), googlenet(1), googlenet(2)])
    sim.place(0, [0])
    view: SimView = sim
    own_speed, others = view.speed_if_placed(1, (0,))
    sim.place(1, [0])
    assert own_speed == pytest.approx(sim.jobs[1].speed, rel=1e-12)
    assert others == pytest.approx(sim.jobs[0].speed, rel=1e-12)
    own_speed, others = view.speed_if_placed(2, (0,))
    sim.place(2, [0])
    assert own_speed == pytest.approx(sim.jobs[2].speed, rel=1e-12)
    assert others == pytest.approx(min(sim.jobs[0].speed, sim.jobs[1].speed), rel=1e-12)


def test_a_measured_simulator_pickles():
    sim = measured_sim([resnet(0), googlenet(1)])
    sim.place(0, [0])
    sim.place(1, [0])
    copy = pickle.loads(pickle.dumps(sim))
    assert copy.jobs[1].speed == sim.jobs[1].speed
    while not copy.done:
        copy.advance()
    while not sim.done:
        sim.advance()
    assert copy.records() == sim.records()


def test_every_catalog_gpu_type_has_a_table():
    model = measured_contention()
    assert set(GAVEL_GPU.values()) <= set(model.extra)
    assert model.mapping == CATALOG_PROXIES
    assert measured_contention(proxies=False).mapping == CATALOG_TO_GAVEL


def test_bad_settings_are_refused_with_their_names():
    with pytest.raises(ValueError, match=r"SimConfig.interference must be one of"):
        SimConfig(interference="gavel")
    with pytest.raises(ValueError, match=r"EnvConfig.simulator.interference"):
        gym.make("GPUShare-v0", config={"interference": "gavel"})
    with pytest.raises(ValueError, match="not both"):
        Simulator(
            [resnet(0)],
            make_cluster("tiny"),
            SimConfig(interference="measured"),
            LinearContention(),
        )
    sim = measured_sim([resnet(0)])
    with pytest.raises(TypeError, match="per-GPU factor"):
        sim.colocation_factor(1.0, 1)


def test_the_env_runs_under_the_measured_model():
    env = gym.make("GPUShare-v0", config={"simulator": {"interference": "measured"}})
    _, info = env.reset(seed=0)
    rng = np.random.default_rng(0)
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        _, _, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    assert terminated and info["metrics"]["mean_jct_s"] > 0
