import torch
from torch.fx import no_such_name  # noqa: F401
