"""The typed seams: the phase vocabulary, the memory kinds' page-locking rule, the service's
jobs and replies, and the registry of error types that cross a socket."""
import json
import re

import pytest

from proofflow.phases import DEVICE_PHASES, KERNEL_PHASES, PROVE_PHASES, Phase, sql_list
from proofflow.prover.errors import (CallerGone, ErrorType, InputError, ProofCheckFailed, ProtocolError, RunCancelled,
                                     StagingTimeout, error_reply)
from proofflow.prover.service.protocol import (CancelReply, CancelRun, KeySource, ProveJob, ProveReply, StageJob,
                                               TransferRecord)
from proofflow.prover.timing import PhaseTimer, Span
from proofflow.spec import STAGING, MemoryKind, Priority
from proofflow.timing import views


def test_a_timer_refuses_a_phase_outside_the_vocabulary():
    timer = PhaseTimer()
    with timer.phase("msm"):
        pass
    assert timer.spans[0].phase is Phase.MSM
    with pytest.raises(ValueError):
        with timer.phase("msm_typo"):
            pass
    with pytest.raises(ValueError):
        Span("gpu", 0.0, 1.0)


def test_the_views_count_the_vocabularys_device_and_prove_phases():
    assert set(KERNEL_PHASES) < set(DEVICE_PHASES) < set(PROVE_PHASES)
    named = set(re.findall(r"'([a-z_0-9]+)'", views.PHASE_SPANS + views.GPU_PHASES + views.KERNEL_PHASES))
    assert named == {p.value for p in PROVE_PHASES}
    assert sql_list([Phase.NTT, "msm"]) == "('ntt', 'msm')"


def test_page_locked_memory_only_where_a_gpu_pins_it():
    assert STAGING == ("pinned", "pageable")
    assert MemoryKind.effective("pinned", "gpu") is MemoryKind.PINNED
    assert MemoryKind.effective("pageable", "gpu") is MemoryKind.PAGEABLE
    assert MemoryKind.effective("pinned", "cpu") is MemoryKind.PAGEABLE
    with pytest.raises(ValueError):
        MemoryKind.effective("mapped", "gpu")


@pytest.mark.parametrize("exc, kind, retry", [
    (InputError("x"), ErrorType.INPUT, False), (ProofCheckFailed("x"), ErrorType.PROOF_CHECK, False),
    (ValueError("x"), ErrorType.REFUSED, True), (MemoryError("x"), ErrorType.OUT_OF_MEMORY, True),
    (StagingTimeout("x"), ErrorType.STAGING_TIMEOUT, True), (CallerGone("x"), ErrorType.CALLER_GONE, True),
    (RunCancelled("x"), ErrorType.CANCELLED, False),
    (ProtocolError("x"), ErrorType.PROTOCOL, True), (KeyError("x"), ErrorType.INTERNAL, True)])
def test_errors_cross_a_socket_under_their_registered_type(exc, kind, retry):
    reply = error_reply(exc)
    assert reply["ok"] is False and reply["error_type"] == kind.value
    assert ErrorType.named(reply["error_type"]) is kind and kind.retryable is retry


def test_a_reply_naming_an_unregistered_type_reads_as_internal():
    assert ErrorType.named("SystemExit") is ErrorType.INTERNAL and ErrorType.named(None) is ErrorType.INTERNAL


def test_jobs_and_replies_round_trip_through_the_wire_form():
    job = ProveJob("/k", "mimc", 8, "bls12_381", "0123456789abcdef", 256, MemoryKind.PINNED, "d/r/p0000", 0.5, "r/0/1")
    assert ProveJob.from_wire(job.to_wire()) == job
    assert job.key_source is KeySource.CIRCUIT and job.priority is Priority.NORMAL
    urgent = ProveJob("/k", "mimc", 8, "bls12_381", "seg", 256, MemoryKind.PINNED, priority=Priority.HIGH)
    wire = json.loads(json.dumps(urgent.to_wire()))
    assert wire["priority"] == "high" and ProveJob.from_wire(wire) == urgent
    zkey_job = ProveJob("/z", "c", 8, "bls12_381", "seg", 256, MemoryKind.PINNED, key_source=KeySource.ZKEY)
    wire = json.loads(json.dumps(zkey_job.to_wire()))
    assert wire["key_source"] == "zkey" and ProveJob.from_wire(wire) == zkey_job
    stage = StageJob("0123456789abcdef", MemoryKind.PAGEABLE)
    assert StageJob.from_wire(stage.to_wire()) == stage
    cancel = CancelRun("proof_run/manual__1/")
    assert CancelRun.from_wire(json.loads(json.dumps(cancel.to_wire()))) == cancel
    assert cancel.holds("proof_run/manual__1/p0003") and not cancel.holds("proof_run/manual__10/p0003")
    assert not cancel.holds(None)
    done = CancelReply("cuda:1", 3, 1)
    assert CancelReply.from_wire(done.to_wire()) == done
    reply = ProveReply(b"\x01\x02", "cuda:0", 7, (Span(Phase.H2D, 1.0, 2.0),),
                       {"h2d": TransferRecord(96, 1.5, MemoryKind.PINNED)}, ("/old",))
    assert ProveReply.from_wire(reply.to_wire()) == reply


@pytest.mark.parametrize("change, message", [
    ({"n": 300}, "n must be a power of two"), ({"n": True}, "job field 'n' must be a int"),
    ({"staging": "mapped"}, "staging must be one of pinned, pageable"), ({"urgency": 1}, "unknown job field"),
    ({"priority": "urgent"}, "priority must be one of high, normal, low"),
    ({"standin_s": float("nan")}, "standin_s must be a positive number"), ({"holder": 5}, "holder must be a string"),
    ({"key_source": "r1cs"}, "key_source must be one of circuit, zkey")])
def test_a_malformed_job_is_refused_naming_its_field(change, message):
    good = ProveJob("/k", "mimc", 8, "bls12_381", "seg", 256, MemoryKind.PINNED).to_wire()
    with pytest.raises(InputError, match=re.escape(message)):
        ProveJob.from_wire({**good, **change})


@pytest.mark.parametrize("owner", ["", "/", "proof_run/", "proof_run//", "/run/", "proof_run/run",
                                   "proof_run/run/p0000", 7])
def test_a_cancel_names_one_run_never_a_partition_or_a_whole_dag(owner):
    with pytest.raises(InputError):
        CancelRun.from_wire({"owner": owner})


def test_a_malformed_reply_is_a_protocol_error():
    with pytest.raises(ProtocolError):
        ProveReply.from_wire({"ok": True, "proof": "zz", "device": "cpu", "pid": 1, "spans": [], "transfers": {}})


def test_a_run_config_is_made_once_and_crosses_xcom_as_a_plain_dict():
    import json
    from proofflow.spec import InvalidParams, RunConfig, validate_params
    config = validate_params({"log2": 8, "partitions": 2, "staging": "pinned"}, gpu_available=lambda: False)
    assert (config.backend, config.staging, config.backend_requested, config.staging_requested) == \
        ("cpu", MemoryKind.PAGEABLE, "auto", MemoryKind.PINNED)  # what ran, and what was asked for
    assert config.partition_ids == [0, 1] and config.chunk_ids == [0, 1] and config.chunk(1) == [1]
    chunked = validate_params({"log2": 8, "partitions": 7, "partitions_per_task": 3}, gpu_available=lambda: False)
    assert chunked.chunk_ids == [0, 1, 2] and [chunked.chunk(c) for c in chunked.chunk_ids] == [[0, 1, 2], [3, 4, 5],
                                                                                                [6]]
    assert RunConfig.from_dict(json.loads(json.dumps(chunked.to_dict()))) == chunked
    wire = json.loads(json.dumps(config.to_dict()))
    assert wire["staging"] == "pageable" and RunConfig.from_dict(wire) == config
    assert config.priority is Priority.NORMAL and wire["priority"] == "normal"  # the default
    high = validate_params({"log2": 8, "priority": "high"}, gpu_available=lambda: False)
    assert RunConfig.from_dict(json.loads(json.dumps(high.to_dict()))).priority is Priority.HIGH
    with pytest.raises(InvalidParams, match="priority must be one of high, normal, low, got 'urgent'"):
        validate_params({"priority": "urgent"}, gpu_available=lambda: False)
    for bad in ({**wire, "log2": "8"}, {**wire, "backend": "auto"}, {**wire, "staging": "mapped"},
                {**wire, "priority": "urgent"}, {**wire, "colour": 1}, {**wire, "partitions_per_task": 0},
                {**wire, "partitions_per_task": True}, [wire]):
        with pytest.raises(InvalidParams):
            RunConfig.from_dict(bad)
    # a band apart: every task of a high run weighs more than any of a normal one's, and so on
    assert Priority.HIGH.weight - Priority.NORMAL.weight == Priority.NORMAL.weight - Priority.LOW.weight == 1000
    assert Priority.HIGH.rank < Priority.NORMAL.rank < Priority.LOW.rank


def test_the_operator_requests_round_trip_and_refuse_malformed_ones():
    from proofflow.prover.service.admin import KeyJob, KeyLoaded, ServiceStatus
    key = KeyJob("/k", "mimc", 8, "bls12_381")
    assert KeyJob.from_wire(json.loads(json.dumps(key.to_wire()))) == key and key.key_source is KeySource.CIRCUIT
    for change, message in (({"log2": "8"}, "job field 'log2' must be a int"), ({"curve": "p256"}, "curve must be"),
                            ({"key_source": "r1cs"}, "key_source must be one of"), ({"seed": 1}, "unknown job field")):
        with pytest.raises(InputError, match=re.escape(message)):
            KeyJob.from_wire({**key.to_wire(), **change})
    loaded = KeyLoaded("cuda:0", "/k", 123, None, ("/old",))
    assert KeyLoaded.from_wire(json.loads(json.dumps(loaded.to_wire()))) == loaded
    with pytest.raises(ProtocolError, match="malformed status reply"):
        ServiceStatus.from_wire({"ok": True, "device": "cpu"})  # a service of before the status had its queue


def test_a_run_config_carries_its_request_id():
    from proofflow.spec import InvalidParams, RunConfig, validate_params
    config = validate_params({"log2": 8, "request_id": "batch-7:42"}, gpu_available=lambda: False)
    assert config.request_id == "batch-7:42" and RunConfig.from_dict(config.to_dict()) == config
    with pytest.raises(InvalidParams, match="request_id must be"):
        RunConfig.from_dict({**config.to_dict(), "request_id": "a/b"})
