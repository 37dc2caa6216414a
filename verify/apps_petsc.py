"""A petsc4py client for verify/apps.sh: CG with Jacobi on the 5-point Laplacian of an n x n
grid (n = argv[1], default 64), rows spread over the ranks; then a vector and a matrix
assembled from off-process entries (every rank adds to every row: PETSc's stash, whose
message counts come from a reduction), checked here against the closed form. PETSc's
collectives under it: MPI_Allreduce of dot products and norms (its own MPI_Op for max-and-sum
on derived pairs), MPI_Bcast, MPI_Allgather(v) in the layouts and scatters.

Prints one line `petsc: its I reason R xnorm X stash ok|BAD` on rank 0: verify/apps.sh
compares I and R with the native run's, X to 1e-9 relative (the sum order of a dot product
may differ) and wants `ok`.
"""
import sys

import petsc4py

petsc4py.init([sys.argv[0]])
from petsc4py import PETSc  # noqa: E402


def laplacian(n):
    a = PETSc.Mat().createAIJ([n * n, n * n], nnz=5)
    r0, r1 = a.getOwnershipRange()
    for r in range(r0, r1):
        i, j = divmod(r, n)
        a.setValue(r, r, 4.0)
        for c, inside in ((r - n, i > 0), (r + n, i < n - 1), (r - 1, j > 0), (r + 1, j < n - 1)):
            if inside:
                a.setValue(r, c, -1.0)
    a.assemble()
    return a


def solve(n):
    a = laplacian(n)
    x, b = a.createVecs()
    r0, r1 = b.getOwnershipRange()
    for r in range(r0, r1):  # a right-hand side independent of p
        b.setValue(r, 1.0 + (r * 7919 % 101) / 100.0)
    b.assemble()
    ksp = PETSc.KSP().create()
    ksp.setOperators(a)
    ksp.setType("cg")
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=1e-10)
    ksp.solve(b, x)
    return ksp.getIterationNumber(), ksp.getConvergedReason(), x.norm()


def stash(length=2000):
    comm = PETSc.COMM_WORLD
    p, me = comm.getSize(), comm.getRank()
    v = PETSc.Vec().createMPI(length)
    for i in range(length):
        v.setValue(i, (me + 1) * 0.5 + i * 1e-3, addv=PETSc.InsertMode.ADD_VALUES)
    v.assemble()
    s = sum((k + 1) * 0.5 for k in range(p))
    r0, r1 = v.getOwnershipRange()
    loc = v.getArray()
    ok = all(abs(loc[k] - (s + p * (r0 + k) * 1e-3)) < 1e-9 for k in range(r1 - r0))
    # rows set by one rank each, most of them owned by another: y = A 1 is 1 in every row
    a = PETSc.Mat().createAIJ([length, length], nnz=(2, 2))
    for i in range(me, length, p):
        a.setValue(i, i, 2.0, addv=PETSc.InsertMode.ADD_VALUES)
        a.setValue(i, (i + 1) % length, -1.0, addv=PETSc.InsertMode.ADD_VALUES)
    a.assemble()
    one, y = a.createVecs()
    one.set(1.0)
    a.mult(one, y)
    ok = ok and abs(y.sum() - length) < 1e-9 and abs(y.norm(PETSc.NormType.INFINITY) - 1.0) < 1e-12
    flag = PETSc.Vec().createMPI((1, PETSc.DECIDE))  # one entry a rank: the ranks' verdicts
    flag.setValue(flag.getOwnershipRange()[0], 0.0 if ok else 1.0)
    flag.assemble()
    return flag.sum() == 0.0


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    its, reason, xnorm = solve(n)
    ok = stash()
    PETSc.Sys.Print("petsc: its %d reason %d xnorm %.15e stash %s" % (its, reason, xnorm, "ok" if ok else "BAD"))


main()
