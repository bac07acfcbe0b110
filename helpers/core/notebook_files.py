"""The course's notebook files: the house form they are kept and handed out in, and a Jupyter kernel of this very
environment to execute one in. Shared by the maintainers' upkeep (helpers/maintain/notebooks.py) and the teacher
kit (student copies; the grader's sandbox runs each notebook in such a kernel).

The house form, in short: outputs and an execution count only on the code cells marked `# NBVAL_CHECK_OUTPUT`,
and fixed metadata (`python -m helpers notebooks --help`, helpers/cli/notebooks.py, says why).
"""

from __future__ import annotations

import copy

MARKER = "NBVAL_CHECK_OUTPUT"
KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python"}


def is_checked(cell) -> bool:
    return cell.get("cell_type") == "code" and any(
        line.strip().lstrip("#").strip() == MARKER for line in cell.get("source", "").splitlines())


def house_form(nb):
    """A copy of `nb` in house form (outputs only on marked cells, fixed metadata)."""
    nb = copy.deepcopy(nb)
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        if not is_checked(cell):
            cell.outputs = []
            cell.execution_count = None
    return nb


def kernel_manager(asynchronous: bool = False):
    """A kernel in this very Python environment (as nbval's --nbval-current-env does). nbclient's cell
    timeout needs the asynchronous manager (a blocking client never lets the timeout fire)."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager, KernelManager

    class CurrentEnv(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                          **ipykernel.kernelspec.get_kernel_dict())

    manager = AsyncKernelManager if asynchronous else KernelManager
    return manager(kernel_name="python3", kernel_spec_manager=CurrentEnv())
