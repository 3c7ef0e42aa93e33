"""One operator per proof-run phase, thin adapters over ``prover``. Nothing here imports
``prover`` at module level: DAG files import these operators at parse time."""
from operators.proof.operators import (CleanupScratchOperator, FinalizePartitionOperator, FinalizeRunOperator,
                                       PrepareScratchOperator, ProveGpuOperator, SetupOperator, StageOperator,
                                       SynthesizeOperator, ValidateOperator)
from operators.proof.params import CIRCUITS, validate_params

__all__ = ["CIRCUITS", "validate_params", "ValidateOperator", "SetupOperator", "PrepareScratchOperator",
           "SynthesizeOperator", "StageOperator", "ProveGpuOperator", "FinalizePartitionOperator",
           "FinalizeRunOperator", "CleanupScratchOperator"]
