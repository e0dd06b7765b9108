"""NPBench-like NumPy kernels, written from memory of the NPBench suite's ``*_numpy.py``
implementations (PolyBench and others), in the same style: in-place writes into arguments,
Python loops (which unroll under tracing), ``np.empty`` + fill, returned values or mutated
arguments. Each kernel ``name`` has an ``init_name()`` giving small deterministic inputs (a tuple
of positional arguments); ``KERNELS`` maps the name to ``(kernel, init)``.

The kernels are meant to be run unmodified by ``tracejit.trace`` and compared with NumPy
(tests/kernels/run_kernels.py, tests/test_npbench_like.py). Sizes are small: unrolled loops make
graphs proportional to their trip counts.
"""
import numpy as np


def _rng():
    return np.random.default_rng(42)


def _fromfunction(f, shape, dtype=np.float64):
    return np.fromfunction(f, shape, dtype=dtype)


# --------------------------------------------------------------------------------------------
# PolyBench
# --------------------------------------------------------------------------------------------

def adi(TSTEPS, N, u):
    v = np.empty(u.shape, dtype=u.dtype)
    p = np.empty(u.shape, dtype=u.dtype)
    q = np.empty(u.shape, dtype=u.dtype)

    DX = 1.0 / N
    DY = 1.0 / N
    DT = 1.0 / TSTEPS
    B1 = 2.0
    B2 = 1.0
    mul1 = B1 * DT / (DX * DX)
    mul2 = B2 * DT / (DY * DY)

    a = -mul1 / 2.0
    b = 1.0 + mul2
    c = a
    d = -mul2 / 2.0
    e = 1.0 + mul2
    f = d

    for t in range(1, TSTEPS + 1):
        v[0, 1:N - 1] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = v[0, 1:N - 1]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -c / (a * p[1:N - 1, j - 1] + b)
            q[1:N - 1, j] = (-d * u[j, 0:N - 2] + (1.0 + 2.0 * d) * u[j, 1:N - 1] -
                             f * u[j, 2:N] - a * q[1:N - 1, j - 1]) / (a * p[1:N - 1, j - 1] + b)
        v[N - 1, 1:N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            v[j, 1:N - 1] = p[1:N - 1, j] * v[j + 1, 1:N - 1] + q[1:N - 1, j]

        u[1:N - 1, 0] = 1.0
        p[1:N - 1, 0] = 0.0
        q[1:N - 1, 0] = u[1:N - 1, 0]
        for j in range(1, N - 1):
            p[1:N - 1, j] = -f / (d * p[1:N - 1, j - 1] + e)
            q[1:N - 1, j] = (-a * v[0:N - 2, j] + (1.0 + 2.0 * a) * v[1:N - 1, j] -
                             c * v[2:N, j] - d * q[1:N - 1, j - 1]) / (d * p[1:N - 1, j - 1] + e)
        u[1:N - 1, N - 1] = 1.0
        for j in range(N - 2, 0, -1):
            u[1:N - 1, j] = p[1:N - 1, j] * u[1:N - 1, j + 1] + q[1:N - 1, j]


def init_adi(TSTEPS=4, N=8):
    u = _fromfunction(lambda i, j: (i + N - j) / N, (N, N))
    return TSTEPS, N, u


def atax(A, x):
    return (A @ x) @ A


def init_atax(M=12, N=14):
    fn = np.float64(N)
    x = _fromfunction(lambda i: 1 + (i / fn), (N,))
    A = _fromfunction(lambda i, j: ((i + j) % N) / (5 * M), (M, N))
    return A, x


def bicg(A, p, r):
    return r @ A, A @ p


def init_bicg(M=12, N=14):
    A = _fromfunction(lambda i, j: (i * (j + 1) % N) / N, (N, M))
    p = _fromfunction(lambda i: (i % M) / M, (M,))
    r = _fromfunction(lambda i: (i % N) / N, (N,))
    return A, p, r


def _spd(N):
    A = np.empty((N, N), dtype=np.float64)
    for i in range(N):
        A[i, :i + 1] = np.fromfunction(lambda j: (-j % N) / N + 1, (i + 1,), dtype=np.float64)
        A[i, i + 1:] = 0.0
        A[i, i] = 1.0
    A[:] = A @ np.transpose(A)
    return A


def cholesky(A):
    A[0, 0] = np.sqrt(A[0, 0])
    for i in range(1, A.shape[0]):
        for j in range(i):
            A[i, j] -= np.dot(A[i, :j], A[j, :j])
            A[i, j] /= A[j, j]
        A[i, i] -= np.dot(A[i, :i], A[i, :i])
        A[i, i] = np.sqrt(A[i, i])


def init_cholesky(N=10):
    return (_spd(N),)


def cholesky2(A):
    A[:] = np.linalg.cholesky(A) + np.triu(A, k=1)


def init_cholesky2(N=10):
    return (_spd(N),)


def correlation(M, float_n, data):
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data -= mean
    data /= np.sqrt(float_n) * stddev
    corr = np.eye(M, dtype=data.dtype)
    for i in range(M - 1):
        corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
    return corr


def init_correlation(M=10, N=12):
    float_n = np.float64(N)
    data = _fromfunction(lambda i, j: (i * j) / M + i, (N, M))
    data[:, 3] = 5.0          # a zero-stddev column: exercises stddev[stddev <= 0.1] = 1.0
    return M, float_n, data


def covariance(M, float_n, data):
    mean = np.mean(data, axis=0)
    data -= mean
    cov = np.zeros((M, M), dtype=data.dtype)
    for i in range(M):
        cov[i:M, i] = cov[i, i:M] = data[:, i] @ data[:, i:M] / (float_n - 1.0)
    return cov


def init_covariance(M=10, N=12):
    float_n = np.float64(N)
    data = _fromfunction(lambda i, j: (i * j) / M, (N, M))
    return M, float_n, data


def deriche(alpha, imgIn):
    k = (1.0 - np.exp(-alpha)) * (1.0 - np.exp(-alpha)) / (
        1.0 + alpha * np.exp(-alpha) - np.exp(2.0 * alpha))
    a1 = a5 = k
    a2 = a6 = k * np.exp(-alpha) * (alpha - 1.0)
    a3 = a7 = k * np.exp(-alpha) * (alpha + 1.0)
    a4 = a8 = -k * np.exp(-2.0 * alpha)
    b1 = 2.0**(-alpha)
    b2 = -np.exp(-2.0 * alpha)
    c1 = c2 = 1

    y1 = np.empty_like(imgIn)
    y1[:, 0] = a1 * imgIn[:, 0]
    y1[:, 1] = a1 * imgIn[:, 1] + a2 * imgIn[:, 0] + b1 * y1[:, 0]
    for j in range(2, imgIn.shape[1]):
        y1[:, j] = (a1 * imgIn[:, j] + a2 * imgIn[:, j - 1] +
                    b1 * y1[:, j - 1] + b2 * y1[:, j - 2])

    y2 = np.empty_like(imgIn)
    y2[:, -1] = 0.0
    y2[:, -2] = a3 * imgIn[:, -1]
    for j in range(imgIn.shape[1] - 3, -1, -1):
        y2[:, j] = (a3 * imgIn[:, j + 1] + a4 * imgIn[:, j + 2] +
                    b1 * y2[:, j + 1] + b2 * y2[:, j + 2])

    imgOut = c1 * (y1 + y2)

    y1[0, :] = a5 * imgOut[0, :]
    y1[1, :] = a5 * imgOut[1, :] + a6 * imgOut[0, :] + b1 * y1[0, :]
    for i in range(2, imgIn.shape[0]):
        y1[i, :] = (a5 * imgOut[i, :] + a6 * imgOut[i - 1, :] +
                    b1 * y1[i - 1, :] + b2 * y1[i - 2, :])

    y2[-1, :] = 0.0
    y2[-2, :] = a7 * imgOut[-1, :]
    for i in range(imgIn.shape[0] - 3, -1, -1):
        y2[i, :] = (a7 * imgOut[i + 1, :] + a8 * imgOut[i + 2, :] +
                    b1 * y2[i + 1, :] + b2 * y2[i + 2, :])

    imgOut[:] = c2 * (y1 + y2)

    return imgOut


def init_deriche(W=10, H=8):
    alpha = np.float64(0.25)
    imgIn = _fromfunction(lambda i, j: ((313 * i + 991 * j) % 65536) / 65535.0, (W, H))
    return alpha, imgIn


def doitgen(NR, NQ, NP, A, C4):
    A[:] = np.reshape(np.reshape(A, (NR, NQ, 1, NP)) @ C4, (NR, NQ, NP))


def init_doitgen(NR=5, NQ=6, NP=7):
    A = _fromfunction(lambda i, j, k: ((i * j + k) % NP) / NP, (NR, NQ, NP))
    C4 = _fromfunction(lambda i, j: (i * j % NP) / NP, (NP, NP))
    return NR, NQ, NP, A, C4


def durbin(r):
    y = np.empty_like(r)
    alpha = -r[0]
    beta = 1.0
    y[0] = -r[0]

    for k in range(1, r.shape[0]):
        beta *= 1.0 - alpha * alpha
        alpha = -(r[k] + np.dot(np.flip(r[:k]), y[:k])) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha

    return y


def init_durbin(N=12):
    r = _fromfunction(lambda i: N + 1 - i, (N,))
    return (r,)


def fdtd_2d(TMAX, ex, ey, hz, _fict_):
    for t in range(TMAX):
        ey[0, :] = _fict_[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def init_fdtd_2d(TMAX=6, NX=10, NY=12):
    ex = _fromfunction(lambda i, j: (i * (j + 1)) / NX, (NX, NY))
    ey = _fromfunction(lambda i, j: (i * (j + 2)) / NY, (NX, NY))
    hz = _fromfunction(lambda i, j: (i * (j + 3)) / NX, (NX, NY))
    _fict_ = _fromfunction(lambda i: i, (TMAX,))
    return TMAX, ex, ey, hz, _fict_


def floyd_warshall(path):
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], np.add.outer(path[:, k], path[k, :]))


def init_floyd_warshall(N=10):
    path = np.fromfunction(lambda i, j: i * j % 7 + 1, (N, N), dtype=np.int32)
    for i in range(N):
        for j in range(N):
            if (i + j) % 13 == 0 or (i + j) % 7 == 0 or (i + j) % 11 == 0:
                path[i, j] = 999
    return (path,)


def gemm(alpha, beta, C, A, B):
    C[:] = alpha * A @ B + beta * C


def init_gemm(NI=10, NJ=11, NK=12):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    C = _fromfunction(lambda i, j: ((i * j + 1) % NI) / NI, (NI, NJ))
    A = _fromfunction(lambda i, k: (i * (k + 1) % NK) / NK, (NI, NK))
    B = _fromfunction(lambda k, j: (k * (j + 2) % NJ) / NJ, (NK, NJ))
    return alpha, beta, C, A, B


def gemver(alpha, beta, A, u1, v1, u2, v2, w, x, y, z):
    A += np.outer(u1, v1) + np.outer(u2, v2)
    x += beta * y @ A + z
    w += alpha * A @ x


def init_gemver(N=12):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    fn = np.float64(N)
    A = _fromfunction(lambda i, j: (i * j % N) / N, (N, N))
    u1 = _fromfunction(lambda i: i, (N,))
    u2 = _fromfunction(lambda i: ((i + 1) / fn) / 2.0, (N,))
    v1 = _fromfunction(lambda i: ((i + 1) / fn) / 4.0, (N,))
    v2 = _fromfunction(lambda i: ((i + 1) / fn) / 6.0, (N,))
    w = np.zeros((N,), dtype=np.float64)
    x = np.zeros((N,), dtype=np.float64)
    y = _fromfunction(lambda i: ((i + 1) / fn) / 8.0, (N,))
    z = _fromfunction(lambda i: ((i + 1) / fn) / 9.0, (N,))
    return alpha, beta, A, u1, v1, u2, v2, w, x, y, z


def gesummv(alpha, beta, A, B, x):
    return alpha * A @ x + beta * B @ x


def init_gesummv(N=12):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    A = _fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, N))
    B = _fromfunction(lambda i, j: ((i * j + 2) % N) / N, (N, N))
    x = _fromfunction(lambda i: (i % N) / N, (N,))
    return alpha, beta, A, B, x


def gramschmidt(A):
    Q = np.zeros_like(A)
    R = np.zeros((A.shape[1], A.shape[1]), dtype=A.dtype)

    for k in range(A.shape[1]):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, A.shape[1]):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]

    return Q, R


def init_gramschmidt(M=8, N=6):
    rng = _rng()
    A = rng.random((M, N), dtype=np.float64)
    while np.linalg.matrix_rank(A) < N:
        A = rng.random((M, N), dtype=np.float64)
    return (A,)


def heat_3d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1, 1:-1] = (
            0.125 * (A[2:, 1:-1, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[:-2, 1:-1, 1:-1]) +
            0.125 * (A[1:-1, 2:, 1:-1] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, :-2, 1:-1]) +
            0.125 * (A[1:-1, 1:-1, 2:] - 2.0 * A[1:-1, 1:-1, 1:-1] + A[1:-1, 1:-1, 0:-2]) +
            A[1:-1, 1:-1, 1:-1])
        A[1:-1, 1:-1, 1:-1] = (
            0.125 * (B[2:, 1:-1, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[:-2, 1:-1, 1:-1]) +
            0.125 * (B[1:-1, 2:, 1:-1] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, :-2, 1:-1]) +
            0.125 * (B[1:-1, 1:-1, 2:] - 2.0 * B[1:-1, 1:-1, 1:-1] + B[1:-1, 1:-1, 0:-2]) +
            B[1:-1, 1:-1, 1:-1])


def init_heat_3d(TSTEPS=6, N=8):
    A = _fromfunction(lambda i, j, k: (i + j + (N - k)) * 10 / N, (N, N, N))
    B = np.copy(A)
    return TSTEPS, A, B


def jacobi_1d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1] = 0.33333 * (A[:-2] + A[1:-1] + A[2:])
        A[1:-1] = 0.33333 * (B[:-2] + B[1:-1] + B[2:])


def init_jacobi_1d(TSTEPS=8, N=20):
    A = _fromfunction(lambda i: (i + 2) / N, (N,))
    B = _fromfunction(lambda i: (i + 3) / N, (N,))
    return TSTEPS, A, B


def jacobi_2d(TSTEPS, A, B):
    for t in range(1, TSTEPS):
        B[1:-1, 1:-1] = 0.2 * (A[1:-1, 1:-1] + A[1:-1, :-2] + A[1:-1, 2:] +
                               A[2:, 1:-1] + A[:-2, 1:-1])
        A[1:-1, 1:-1] = 0.2 * (B[1:-1, 1:-1] + B[1:-1, :-2] + B[1:-1, 2:] +
                               B[2:, 1:-1] + B[:-2, 1:-1])


def init_jacobi_2d(TSTEPS=8, N=12):
    A = _fromfunction(lambda i, j: i * (j + 2) / N, (N, N))
    B = _fromfunction(lambda i, j: i * (j + 3) / N, (N, N))
    return TSTEPS, A, B


def k2mm(alpha, beta, A, B, C, D):
    D[:] = alpha * A @ B @ C + beta * D


def init_k2mm(NI=8, NJ=9, NK=10, NL=11):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    A = _fromfunction(lambda i, j: ((i * j + 1) % NI) / NI, (NI, NK))
    B = _fromfunction(lambda i, j: (i * (j + 1) % NJ) / NJ, (NK, NJ))
    C = _fromfunction(lambda i, j: ((i * (j + 3) + 1) % NL) / NL, (NJ, NL))
    D = _fromfunction(lambda i, j: (i * (j + 2) % NK) / NK, (NI, NL))
    return alpha, beta, A, B, C, D


def k3mm(A, B, C, D):
    return A @ B @ C @ D


def init_k3mm(NI=8, NJ=9, NK=10, NL=11, NM=12):
    A = _fromfunction(lambda i, j: ((i * j + 1) % NI) / (5 * NI), (NI, NK))
    B = _fromfunction(lambda i, j: ((i * (j + 1) + 2) % NJ) / (5 * NJ), (NK, NJ))
    C = _fromfunction(lambda i, j: (i * (j + 3) % NL) / (5 * NL), (NJ, NM))
    D = _fromfunction(lambda i, j: ((i * (j + 2) + 2) % NK) / (5 * NK), (NM, NL))
    return A, B, C, D


def lu(A):
    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]


def init_lu(N=10):
    return (_spd(N),)


def ludcmp(A, b):
    x = np.zeros_like(b)
    y = np.zeros_like(b)

    for i in range(A.shape[0]):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, A.shape[0]):
            A[i, j] -= A[i, :i] @ A[:i, j]
    for i in range(A.shape[0]):
        y[i] = b[i] - A[i, :i] @ y[:i]
    for i in range(A.shape[0] - 1, -1, -1):
        x[i] = (y[i] - A[i, i + 1:] @ x[i + 1:]) / A[i, i]

    return x, y


def init_ludcmp(N=10):
    fn = np.float64(N)
    b = _fromfunction(lambda i: (i + 1) / fn / 2.0 + 4.0, (N,))
    return _spd(N), b


def mvt(x1, x2, y_1, y_2, A):
    x1 += A @ y_1
    x2 += y_2 @ A


def init_mvt(N=12):
    x1 = _fromfunction(lambda i: (i % N) / N, (N,))
    x2 = _fromfunction(lambda i: ((i + 1) % N) / N, (N,))
    y_1 = _fromfunction(lambda i: ((i + 3) % N) / N, (N,))
    y_2 = _fromfunction(lambda i: ((i + 4) % N) / N, (N,))
    A = _fromfunction(lambda i, j: (i * j % N) / N, (N, N))
    return x1, x2, y_1, y_2, A


def _nussinov_match(b1, b2):
    if b1 + b2 == 3:
        return 1
    else:
        return 0


def nussinov(N, seq):
    table = np.zeros((N, N), np.int32)

    for i in range(N - 1, -1, -1):
        for j in range(i + 1, N):
            if j - 1 >= 0:
                table[i, j] = max(table[i, j], table[i, j - 1])
            if i + 1 < N:
                table[i, j] = max(table[i, j], table[i + 1, j])
            if j - 1 >= 0 and i + 1 < N:
                if i < j - 1:
                    table[i, j] = max(table[i, j],
                                      table[i + 1, j - 1] + _nussinov_match(seq[i], seq[j]))
                else:
                    table[i, j] = max(table[i, j], table[i + 1, j - 1])
            for k in range(i + 1, j):
                table[i, j] = max(table[i, j], table[i, k] + table[k + 1, j])

    return table


def init_nussinov(N=8):
    seq = np.fromfunction(lambda i: (i + 1) % 4, (N,), dtype=np.int32)
    return N, seq


def seidel_2d(TSTEPS, N, A):
    for t in range(0, TSTEPS - 1):
        for i in range(1, N - 1):
            A[i, 1:-1] += (A[i - 1, :-2] + A[i - 1, 1:-1] + A[i - 1, 2:] + A[i, 2:] +
                           A[i + 1, :-2] + A[i + 1, 1:-1] + A[i + 1, 2:])
            for j in range(1, N - 1):
                A[i, j] += A[i, j - 1]
                A[i, j] /= 9.0


def init_seidel_2d(TSTEPS=4, N=8):
    A = _fromfunction(lambda i, j: (i * (j + 2) + 2) / N, (N, N))
    return TSTEPS, N, A


def symm(alpha, beta, C, A, B):
    temp2 = np.empty((C.shape[1],), dtype=C.dtype)
    C *= beta
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[:i, j] += alpha * B[i, j] * A[i, :i]
            temp2[j] = B[:i, j] @ A[i, :i]
        C[i, :] += alpha * B[i, :] * A[i, i] + alpha * temp2


def init_symm(M=8, N=6):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    C = _fromfunction(lambda i, j: ((i + j) % 100) / M, (M, N))
    B = _fromfunction(lambda i, j: ((N + i - j) % 100) / M, (M, N))
    A = np.empty((M, M), dtype=np.float64)
    for i in range(M):
        A[i, :i + 1] = np.fromfunction(lambda j: ((i + j) % 100) / M, (i + 1,))
        A[i, i + 1:] = -999
    return alpha, beta, C, A, B


def syr2k(alpha, beta, C, A, B):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += (A[:i + 1, k] * alpha * B[i, k] + B[:i + 1, k] * alpha * A[i, k])


def init_syr2k(M=6, N=8):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    C = _fromfunction(lambda i, j: ((i * j + 3) % N) / M, (N, N))
    A = _fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, M))
    B = _fromfunction(lambda i, j: ((i * j + 2) % M) / M, (N, M))
    return alpha, beta, C, A, B


def syrk(alpha, beta, C, A):
    for i in range(A.shape[0]):
        C[i, :i + 1] *= beta
        for k in range(A.shape[1]):
            C[i, :i + 1] += alpha * A[i, k] * A[:i + 1, k]


def init_syrk(M=6, N=8):
    alpha, beta = np.float64(1.5), np.float64(1.2)
    C = _fromfunction(lambda i, j: ((i * j + 2) % M) / M, (N, N))
    A = _fromfunction(lambda i, j: ((i * j + 1) % N) / N, (N, M))
    return alpha, beta, C, A


def trisolv(L, x, b):
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]


def init_trisolv(N=12):
    L = _fromfunction(lambda i, j: (i + N - j + 1) * 2 / N, (N, N))
    L = np.tril(L)
    x = np.full((N,), -999, dtype=np.float64)
    b = _fromfunction(lambda i: i, (N,))
    return L, x, b


def trmm(alpha, A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            B[i, j] += np.dot(A[i + 1:, i], B[i + 1:, j])
    B *= alpha


def init_trmm(M=8, N=6):
    alpha = np.float64(1.5)
    A = _fromfunction(lambda i, j: ((i * j) % M) / M, (M, M))
    for i in range(M):
        A[i, i + 1:] = 0.0
        A[i, i] = 1.0
    B = _fromfunction(lambda i, j: ((N + (i - j)) % N) / N, (M, N))
    return alpha, A, B


# --------------------------------------------------------------------------------------------
# Others (pythran, CFD Python, deep learning, weather stencils, misc)
# --------------------------------------------------------------------------------------------

def arc_distance(theta_1, phi_1, theta_2, phi_2):
    temp = (np.sin((theta_2 - theta_1) / 2)**2 +
            np.cos(theta_1) * np.cos(theta_2) * np.sin((phi_2 - phi_1) / 2)**2)
    distance_matrix = 2 * (np.arctan2(np.sqrt(temp), np.sqrt(1 - temp)))
    return distance_matrix


def init_arc_distance(N=40):
    rng = _rng()
    return tuple(rng.random((N,), dtype=np.float64) for _ in range(4))


def azimint_naive(data, radius, npt):
    rmax = radius.max()
    res = np.zeros(npt, dtype=np.float64)
    for i in range(npt):
        r1 = rmax * i / npt
        r2 = rmax * (i + 1) / npt
        mask_r12 = np.logical_and((r1 <= radius), (radius < r2))
        values_r12 = data[mask_r12]
        res[i] = values_r12.mean()
    return res


def init_azimint_naive(N=40, npt=5):
    rng = _rng()
    data = rng.random((N,), dtype=np.float64)
    radius = rng.random((N,), dtype=np.float64)
    return data, radius, npt


def azimint_hist(data, radius, npt):
    histu = np.histogram(radius, npt)[0]
    histw = np.histogram(radius, npt, weights=data)[0]
    return histw / histu


def init_azimint_hist(N=40, npt=5):
    return init_azimint_naive(N, npt)


def _cavity_build_up_b(b, rho, dt, u, v, dx, dy):
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                      (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                            ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 *
                            ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                             (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                            ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))


def _cavity_pressure_poisson(nit, p, dx, dy, b):
    pn = np.empty_like(p)
    pn = p.copy()

    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 +
                          (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) / (2 * (dx**2 + dy**2)) -
                         dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])

        p[:, -1] = p[:, -2]  # dp/dx = 0 at x = 2
        p[0, :] = p[1, :]  # dp/dy = 0 at y = 0
        p[:, 0] = p[:, 1]  # dp/dx = 0 at x = 0
        p[-1, :] = 0  # p = 0 at y = 2


def cavity_flow(nx, ny, nt, nit, u, v, dt, dx, dy, p, rho, nu):
    un = np.empty_like(u)
    vn = np.empty_like(v)
    b = np.zeros((ny, nx))

    for n in range(nt):
        un = u.copy()
        vn = v.copy()

        _cavity_build_up_b(b, rho, dt, u, v, dx, dy)
        _cavity_pressure_poisson(nit, p, dx, dy, b)

        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (un[1:-1, 1:-1] - un[1:-1, 0:-2]) - vn[1:-1, 1:-1] * dt / dy *
                         (un[1:-1, 1:-1] - un[0:-2, 1:-1]) - dt / (2 * rho * dx) *
                         (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu *
                         (dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                          dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])))

        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) - vn[1:-1, 1:-1] * dt / dy *
                         (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) - dt / (2 * rho * dy) *
                         (p[2:, 1:-1] - p[0:-2, 1:-1]) + nu *
                         (dt / dx**2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                          dt / dy**2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))

        u[0, :] = 0
        u[:, 0] = 0
        u[:, -1] = 0
        u[-1, :] = 1  # set velocity on cavity lid equal to 1
        v[0, :] = 0
        v[-1, :] = 0
        v[:, 0] = 0
        v[:, -1] = 0


def init_cavity_flow(ny=8, nx=8, nt=4, nit=5, rho=1.0, nu=0.1):
    u = np.zeros((ny, nx), dtype=np.float64)
    v = np.zeros((ny, nx), dtype=np.float64)
    p = np.zeros((ny, nx), dtype=np.float64)
    dx = 2 / (nx - 1)
    dy = 2 / (ny - 1)
    dt = .1 / ((nx - 1) * (ny - 1))
    return nx, ny, nt, nit, u, v, dt, dx, dy, p, rho, nu


def _channel_build_up_b(rho, dt, dx, dy, u, v):
    b = np.zeros_like(u)
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) +
                                      (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                            ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 *
                            ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                             (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) -
                            ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))

    # Periodic BC Pressure @ x = 2
    b[1:-1, -1] = (rho * (1 / dt * ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx) +
                                    (v[2:, -1] - v[0:-2, -1]) / (2 * dy)) -
                          ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx))**2 - 2 *
                          ((u[2:, -1] - u[0:-2, -1]) / (2 * dy) *
                           (v[1:-1, 0] - v[1:-1, -2]) / (2 * dx)) -
                          ((v[2:, -1] - v[0:-2, -1]) / (2 * dy))**2))

    # Periodic BC Pressure @ x = 0
    b[1:-1, 0] = (rho * (1 / dt * ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx) +
                                   (v[2:, 0] - v[0:-2, 0]) / (2 * dy)) -
                         ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx))**2 - 2 *
                         ((u[2:, 0] - u[0:-2, 0]) / (2 * dy) *
                          (v[1:-1, 1] - v[1:-1, -1]) / (2 * dx)) -
                         ((v[2:, 0] - v[0:-2, 0]) / (2 * dy))**2))

    return b


def _channel_pressure_poisson_periodic(nit, p, dx, dy, b):
    pn = np.empty_like(p)

    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 +
                          (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) / (2 * (dx**2 + dy**2)) -
                         dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])

        # Periodic BC Pressure @ x = 2
        p[1:-1, -1] = (((pn[1:-1, 0] + pn[1:-1, -2]) * dy**2 +
                        (pn[2:, -1] + pn[0:-2, -1]) * dx**2) / (2 * (dx**2 + dy**2)) -
                       dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, -1])

        # Periodic BC Pressure @ x = 0
        p[1:-1, 0] = (((pn[1:-1, 1] + pn[1:-1, -1]) * dy**2 +
                       (pn[2:, 0] + pn[0:-2, 0]) * dx**2) / (2 * (dx**2 + dy**2)) -
                      dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 0])

        # Wall boundary conditions, pressure
        p[-1, :] = p[-2, :]  # dp/dy = 0 at y = 2
        p[0, :] = p[1, :]  # dp/dy = 0 at y = 0


def channel_flow(nit, u, v, dt, dx, dy, p, rho, nu, F):
    udiff = 1
    stepcount = 0

    while udiff > .001:
        un = u.copy()
        vn = v.copy()

        b = _channel_build_up_b(rho, dt, dx, dy, u, v)
        _channel_pressure_poisson_periodic(nit, p, dx, dy, b)

        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (un[1:-1, 1:-1] - un[1:-1, 0:-2]) - vn[1:-1, 1:-1] * dt / dy *
                         (un[1:-1, 1:-1] - un[0:-2, 1:-1]) - dt / (2 * rho * dx) *
                         (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu *
                         (dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) +
                          dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])) +
                         F * dt)

        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx *
                         (vn[1:-1, 1:-1] - vn[1:-1, 0:-2]) - vn[1:-1, 1:-1] * dt / dy *
                         (vn[1:-1, 1:-1] - vn[0:-2, 1:-1]) - dt / (2 * rho * dy) *
                         (p[2:, 1:-1] - p[0:-2, 1:-1]) + nu *
                         (dt / dx**2 * (vn[1:-1, 2:] - 2 * vn[1:-1, 1:-1] + vn[1:-1, 0:-2]) +
                          dt / dy**2 * (vn[2:, 1:-1] - 2 * vn[1:-1, 1:-1] + vn[0:-2, 1:-1])))

        # Periodic BC u @ x = 2
        u[1:-1, -1] = (un[1:-1, -1] - un[1:-1, -1] * dt / dx * (un[1:-1, -1] - un[1:-1, -2]) -
                       vn[1:-1, -1] * dt / dy * (un[1:-1, -1] - un[0:-2, -1]) -
                       dt / (2 * rho * dx) * (p[1:-1, 0] - p[1:-1, -2]) + nu *
                       (dt / dx**2 * (un[1:-1, 0] - 2 * un[1:-1, -1] + un[1:-1, -2]) +
                        dt / dy**2 * (un[2:, -1] - 2 * un[1:-1, -1] + un[0:-2, -1])) + F * dt)

        # Periodic BC u @ x = 0
        u[1:-1, 0] = (un[1:-1, 0] - un[1:-1, 0] * dt / dx * (un[1:-1, 0] - un[1:-1, -1]) -
                      vn[1:-1, 0] * dt / dy * (un[1:-1, 0] - un[0:-2, 0]) -
                      dt / (2 * rho * dx) * (p[1:-1, 1] - p[1:-1, -1]) + nu *
                      (dt / dx**2 * (un[1:-1, 1] - 2 * un[1:-1, 0] + un[1:-1, -1]) +
                       dt / dy**2 * (un[2:, 0] - 2 * un[1:-1, 0] + un[0:-2, 0])) + F * dt)

        # Periodic BC v @ x = 2
        v[1:-1, -1] = (vn[1:-1, -1] - un[1:-1, -1] * dt / dx * (vn[1:-1, -1] - vn[1:-1, -2]) -
                       vn[1:-1, -1] * dt / dy * (vn[1:-1, -1] - vn[0:-2, -1]) -
                       dt / (2 * rho * dy) * (p[2:, -1] - p[0:-2, -1]) + nu *
                       (dt / dx**2 * (vn[1:-1, 0] - 2 * vn[1:-1, -1] + vn[1:-1, -2]) +
                        dt / dy**2 * (vn[2:, -1] - 2 * vn[1:-1, -1] + vn[0:-2, -1])))

        # Periodic BC v @ x = 0
        v[1:-1, 0] = (vn[1:-1, 0] - un[1:-1, 0] * dt / dx * (vn[1:-1, 0] - vn[1:-1, -1]) -
                      vn[1:-1, 0] * dt / dy * (vn[1:-1, 0] - vn[0:-2, 0]) -
                      dt / (2 * rho * dy) * (p[2:, 0] - p[0:-2, 0]) + nu *
                      (dt / dx**2 * (vn[1:-1, 1] - 2 * vn[1:-1, 0] + vn[1:-1, -1]) +
                       dt / dy**2 * (vn[2:, 0] - 2 * vn[1:-1, 0] + vn[0:-2, 0])))

        # Wall BC: u,v = 0 @ y = 0,2
        u[0, :] = 0
        u[-1, :] = 0
        v[0, :] = 0
        v[-1, :] = 0

        udiff = (np.sum(u) - np.sum(un)) / np.sum(u)
        stepcount += 1

    return stepcount


def init_channel_flow(ny=8, nx=8, nit=5, rho=1.0, nu=0.1, F=1.0):
    u = np.zeros((ny, nx), dtype=np.float64)
    v = np.zeros((ny, nx), dtype=np.float64)
    p = np.ones((ny, nx), dtype=np.float64)
    dx = 2 / (nx - 1)
    dy = 2 / (ny - 1)
    dt = .1 / ((nx - 1) * (ny - 1))
    return nit, u, v, dt, dx, dy, p, rho, nu, F


def compute(array_1, array_2, a, b, c):
    return np.clip(array_1, 2, 10) * a + array_2 * b + c


def init_compute(M=12, N=14):
    rng = _rng()
    array_1 = rng.uniform(0, 1000, size=(M, N)).astype(np.int64)
    array_2 = rng.uniform(0, 1000, size=(M, N)).astype(np.int64)
    a = np.int64(4)
    b = np.int64(3)
    c = np.int64(9)
    return array_1, array_2, a, b, c


def contour_integral(NR, NM, slab_per_bc, Ham, int_pts, Y):
    P0 = np.zeros((NR, NM), dtype=np.complex128)
    P1 = np.zeros((NR, NM), dtype=np.complex128)
    for idx in range(32):
        z = int_pts[idx]
        Tz = np.zeros((NR, NR), dtype=np.complex128)
        for n in range(slab_per_bc + 1):
            zz = np.power(z, slab_per_bc / 2 - n)
            Tz += zz * Ham[n]
        if NR == NM:
            X = np.linalg.inv(Tz)
        else:
            X = np.linalg.solve(Tz, Y)
        if abs(z) < 1.0:
            X = -X
        P0 += X
        P1 += z * X

    return P0, P1


def init_contour_integral(NR=4, NM=6, slab_per_bc=2, num_int_pts=32):
    rng = _rng()
    Ham = (rng.random((slab_per_bc + 1, NR, NR)) + 1j * rng.random((slab_per_bc + 1, NR, NR)))
    int_pts = rng.random((num_int_pts,)) + 1j * rng.random((num_int_pts,))
    Y = rng.random((NR, NM)) + 1j * rng.random((NR, NM))
    return NR, NM, slab_per_bc, Ham, int_pts, Y


def _conv2d(input, weights):
    K = weights.shape[0]  # Assuming square kernel
    N = input.shape[0]
    H_out = input.shape[1] - K + 1
    W_out = input.shape[2] - K + 1
    C_out = weights.shape[3]
    output = np.empty((N, H_out, W_out, C_out), dtype=np.float32)

    for i in range(H_out):
        for j in range(W_out):
            output[:, i, j, :] = np.sum(
                input[:, i:i + K, j:j + K, :, np.newaxis] * weights[np.newaxis, :, :, :],
                axis=(1, 2, 3),
            )

    return output


def conv2d_bias(input, weights, bias):
    return _conv2d(input, weights) + bias


def init_conv2d_bias(N=2, C_in=3, C_out=4, K=3, H=8, W=8):
    rng = _rng()
    input = rng.random((N, H, W, C_in), dtype=np.float32)
    weights = rng.random((K, K, C_in, C_out), dtype=np.float32)
    bias = rng.random((C_out,), dtype=np.float32)
    return input, weights, bias


def crc16(data, poly=0x8408):
    '''
    CRC-16-CCITT Algorithm
    '''
    crc = 0xFFFF
    for b in data:
        cur_byte = 0xFF & b
        for _ in range(0, 8):
            if (crc & 0x0001) ^ (cur_byte & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            cur_byte >>= 1
    crc = (~crc & 0xFFFF)
    crc = (crc << 8) | ((crc >> 8) & 0xFF)

    return crc & 0xFFFF


def init_crc16(N=16):
    rng = _rng()
    data = rng.integers(0, 256, size=(N,), dtype=np.uint8)
    return (data,)


def go_fast(a):
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace


def init_go_fast(N=20):
    rng = _rng()
    return (rng.random((N, N), dtype=np.float64),)


def hdiff(in_field, out_field, coeff):
    I, J, K = out_field.shape[0], out_field.shape[1], out_field.shape[2]
    lap_field = 4.0 * in_field[1:I + 3, 1:J + 3, :] - (
        in_field[2:I + 4, 1:J + 3, :] + in_field[0:I + 2, 1:J + 3, :] +
        in_field[1:I + 3, 2:J + 4, :] + in_field[1:I + 3, 0:J + 2, :])

    res = lap_field[1:, 1:J + 1, :] - lap_field[:-1, 1:J + 1, :]
    flx_field = np.where(
        (res * (in_field[2:I + 3, 2:J + 2, :] - in_field[1:I + 2, 2:J + 2, :]) > 0),
        0,
        res,
    )

    res = lap_field[1:I + 1, 1:, :] - lap_field[1:I + 1, :-1, :]
    fly_field = np.where(
        (res * (in_field[2:I + 2, 2:J + 3, :] - in_field[2:I + 2, 1:J + 2, :]) > 0),
        0,
        res,
    )

    out_field[:, :, :] = in_field[2:I + 2, 2:J + 2, :] - coeff[:, :, :] * (
        flx_field[1:, :, :] - flx_field[:-1, :, :] + fly_field[:, 1:, :] - fly_field[:, :-1, :])


def init_hdiff(I=8, J=7, K=4):
    rng = _rng()
    in_field = rng.random((I + 4, J + 4, K), dtype=np.float64)
    out_field = rng.random((I, J, K), dtype=np.float64)
    coeff = rng.random((I, J, K), dtype=np.float64)
    return in_field, out_field, coeff


def _relu(x):
    return np.maximum(x, 0)


def _softmax(x):
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


def _maxpool2d(x):
    output = np.empty([x.shape[0], x.shape[1] // 2, x.shape[2] // 2, x.shape[3]], dtype=x.dtype)
    for i in range(x.shape[1] // 2):
        for j in range(x.shape[2] // 2):
            output[:, i, j, :] = np.max(x[:, 2 * i:2 * i + 2, 2 * j:2 * j + 2, :], axis=(1, 2))
    return output


def lenet(input, conv1, conv1bias, conv2, conv2bias, fc1w, fc1b, fc2w, fc2b, fc3w, fc3b, N,
          C_before_fc1):
    x = _relu(_conv2d(input, conv1) + conv1bias)
    x = _maxpool2d(x)
    x = _relu(_conv2d(x, conv2) + conv2bias)
    x = _maxpool2d(x)
    x = np.reshape(x, (N, C_before_fc1))
    x = _relu(x @ fc1w + fc1b)
    x = _relu(x @ fc2w + fc2b)
    return x @ fc3w + fc3b


def init_lenet(N=2, H=16, W=16):
    rng = _rng()
    H_conv1 = H - 4
    W_conv1 = W - 4
    H_pool1 = H_conv1 // 2
    W_pool1 = W_conv1 // 2
    H_conv2 = H_pool1 - 4
    W_conv2 = W_pool1 - 4
    H_pool2 = H_conv2 // 2
    W_pool2 = W_conv2 // 2
    C_before_fc1 = 16 * H_pool2 * W_pool2

    f32 = np.float32
    input = rng.random((N, H, W, 1), dtype=f32)
    conv1 = rng.random((5, 5, 1, 6), dtype=f32)
    conv1bias = rng.random((6,), dtype=f32)
    conv2 = rng.random((5, 5, 6, 16), dtype=f32)
    conv2bias = rng.random((16,), dtype=f32)
    fc1w = rng.random((C_before_fc1, 120), dtype=f32)
    fc1b = rng.random((120,), dtype=f32)
    fc2w = rng.random((120, 84), dtype=f32)
    fc2b = rng.random((84,), dtype=f32)
    fc3w = rng.random((84, 10), dtype=f32)
    fc3b = rng.random((10,), dtype=f32)
    return (input, conv1, conv1bias, conv2, conv2bias, fc1w, fc1b, fc2w, fc2b, fc3w, fc3b, N,
            C_before_fc1)


def mandelbrot1(xmin, xmax, ymin, ymax, xn, yn, maxiter, horizon=2.0):
    # Adapted from https://www.ibm.com/developerworks/community/blogs/jfp/...
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)
    C = X + Y[:, None] * 1j
    N = np.zeros(C.shape, dtype=np.int64)
    Z = np.zeros(C.shape, dtype=np.complex128)
    for n in range(maxiter):
        I = np.less(abs(Z), horizon)
        N[I] = n
        Z[I] = Z[I]**2 + C[I]
    N[N == maxiter - 1] = 0
    return Z, N


def init_mandelbrot1(xn=12, yn=10, maxiter=10):
    return -2.25, 0.75, -1.25, 1.25, xn, yn, maxiter


def mandelbrot2(xmin, xmax, ymin, ymax, xn, yn, itermax, horizon=2.0):
    # Adapted from
    # https://thesamovar.wordpress.com/2009/03/22/fast-fractals-with-python-and-numpy/
    Xi, Yi = np.mgrid[0:xn, 0:yn]
    Xi, Yi = Xi.astype(np.uint32), Yi.astype(np.uint32)
    X = np.linspace(xmin, xmax, xn, dtype=np.float64)[Xi]
    Y = np.linspace(ymin, ymax, yn, dtype=np.float64)[Yi]
    C = X + Y * 1j
    N_ = np.zeros(C.shape, dtype=np.uint32)
    Z_ = np.zeros(C.shape, dtype=np.complex128)
    Xi.shape = Yi.shape = C.shape = xn * yn

    Z = np.zeros(C.shape, np.complex128)
    for i in range(itermax):
        if not len(Z):
            break

        # Compute for relevant points only
        np.multiply(Z, Z, Z)
        np.add(Z, C, Z)

        # Failed convergence
        I = abs(Z) > horizon
        N_[Xi[I], Yi[I]] = i + 1
        Z_[Xi[I], Yi[I]] = Z[I]

        # Keep going with those who have not diverged yet
        np.logical_not(I, I)  # NPBench: np.negative(I, I), which NumPy >= 1.13 refuses for bool
        Z = Z[I]
        Xi, Yi = Xi[I], Yi[I]
        C = C[I]
    return Z_.T, N_.T


def init_mandelbrot2(xn=12, yn=10, itermax=10):
    return -2.25, 0.75, -1.25, 1.25, xn, yn, itermax


def mlp(input, w1, b1, w2, b2, w3, b3):
    x = _relu(input @ w1 + b1)
    x = _relu(x @ w2 + b2)
    x = _softmax(x @ w3 + b3)  # Softmax call can be omitted if necessary
    return x


def init_mlp(C_in=3, N=8, S0=16, S1=12, S2=10):
    rng = _rng()
    f32 = np.float32
    input = rng.random((C_in, N), dtype=f32)
    w1 = rng.random((N, S0), dtype=f32)
    b1 = rng.random((S0,), dtype=f32)
    w2 = rng.random((S0, S1), dtype=f32)
    b2 = rng.random((S1,), dtype=f32)
    w3 = rng.random((S1, S2), dtype=f32)
    b3 = rng.random((S2,), dtype=f32)
    return input, w1, b1, w2, b2, w3, b3


def _nbody_getAcc(pos, mass, G, softening):
    # positions r = [x,y,z] for all particles
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]

    # matrix that stores all pairwise particle separations: r_j - r_i
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z

    # matrix that stores 1/r^3 for all particle pairwise particle separations
    inv_r3 = (dx**2 + dy**2 + dz**2 + softening**2)
    inv_r3[inv_r3 > 0] = inv_r3[inv_r3 > 0]**(-1.5)

    ax = G * (dx * inv_r3) @ mass
    ay = G * (dy * inv_r3) @ mass
    az = G * (dz * inv_r3) @ mass

    # pack together the acceleration components
    a = np.hstack((ax, ay, az))

    return a


def _nbody_getEnergy(pos, vel, mass, G):
    # Kinetic Energy:
    KE = 0.5 * np.sum(mass * vel**2)

    # Potential Energy:

    # positions r = [x,y,z] for all particles
    x = pos[:, 0:1]
    y = pos[:, 1:2]
    z = pos[:, 2:3]

    # matrix that stores all pairwise particle separations: r_j - r_i
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z

    # matrix that stores 1/r for all particle pairwise particle separations
    inv_r = np.sqrt(dx**2 + dy**2 + dz**2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]

    # sum over upper triangle, to count each interaction only once
    PE = G * np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))

    return KE, PE


def nbody(mass, pos, vel, N, Nt, dt, G, softening):
    # Convert to Center-of-Mass frame
    vel -= np.mean(mass * vel, 0) / np.mean(mass)

    # calculate initial gravitational accelerations
    acc = _nbody_getAcc(pos, mass, G, softening)

    # calculate initial energy of system
    KE = np.ndarray(Nt + 1, dtype=np.float64)
    PE = np.ndarray(Nt + 1, dtype=np.float64)
    KE[0], PE[0] = _nbody_getEnergy(pos, vel, mass, G)

    t = 0.0

    # Simulation Main Loop
    for i in range(Nt):
        # (1/2) kick
        vel += acc * dt / 2.0

        # drift
        pos += vel * dt

        # update accelerations
        acc = _nbody_getAcc(pos, mass, G, softening)

        # (1/2) kick
        vel += acc * dt / 2.0

        # update time
        t += dt

        # get energy of system
        KE[i + 1], PE[i + 1] = _nbody_getEnergy(pos, vel, mass, G)

    return KE, PE


def init_nbody(N=8, Nt=5, dt=0.01, G=1.0, softening=0.1):
    rng = _rng()
    mass = 20.0 * np.ones((N, 1)) / N  # total mass of particles is 20
    pos = rng.random((N, 3))  # randomly selected positions and velocities
    vel = rng.random((N, 3))
    return mass, pos, vel, N, Nt, dt, G, softening


def _batchnorm2d(x, eps=1e-5):
    mean = np.mean(x, axis=0, keepdims=True)
    std = np.std(x, axis=0, keepdims=True)
    return (x - mean) / np.sqrt(std + eps)


def resnet(input, conv1, conv2, conv3):
    # Pad output of first convolution for second convolution
    padded = np.zeros((input.shape[0], input.shape[1] + 2, input.shape[2] + 2, conv1.shape[3]))

    padded[:, 1:-1, 1:-1, :] = _conv2d(input, conv1)
    x = _batchnorm2d(padded)
    x = _relu(x)

    x = _conv2d(x, conv2)
    x = _batchnorm2d(x)
    x = _relu(x)
    x = _conv2d(x, conv3)
    x = _batchnorm2d(x)
    return _relu(x + input)


def init_resnet(N=2, W=6, H=6, C1=4, C2=3):
    rng = _rng()
    input = rng.random((N, H, W, C1), dtype=np.float32)
    conv1 = rng.random((1, 1, C1, C2), dtype=np.float32)
    conv2 = rng.random((3, 3, C2, C2), dtype=np.float32)
    conv3 = rng.random((1, 1, C2, C1), dtype=np.float32)
    return input, conv1, conv2, conv3


def scattering_self_energies(neigh_idx, dH, G, D, Sigma):
    for k in range(G.shape[0]):
        for E in range(G.shape[1]):
            for q in range(D.shape[0]):
                for w in range(D.shape[1]):
                    for i in range(D.shape[-2]):
                        for j in range(D.shape[-1]):
                            for a in range(neigh_idx.shape[0]):
                                for b in range(neigh_idx.shape[1]):
                                    if E - w >= 0:
                                        dHG = G[k, E - w, neigh_idx[a, b]] @ dH[a, b, i]
                                        dHD = dH[a, b, j] * D[q, w, a, b, i, j]
                                        Sigma[k, E, a] += dHG @ dHD


def init_scattering_self_energies(Nkz=1, NE=3, Nqz=1, Nw=2, N3D=2, NA=2, NB=2, Norb=2):
    rng = _rng()

    def cplx(shape):
        return rng.random(shape) + 1j * rng.random(shape)

    neigh_idx = np.empty((NA, NB), dtype=np.int32)
    for i in range(NA):
        neigh_idx[i] = np.positive(np.arange(i - NB / 2, i + NB / 2) % NA)
    dH = cplx((NA, NB, N3D, Norb, Norb))
    G = cplx((Nkz, NE, NA, Norb, Norb))
    D = cplx((Nqz, Nw, NA, NB, N3D, N3D))
    Sigma = np.zeros((Nkz, NE, NA, Norb, Norb), dtype=np.complex128)
    return neigh_idx, dH, G, D, Sigma


def softmax(x):
    tmp_max = np.max(x, axis=-1, keepdims=True)
    tmp_out = np.exp(x - tmp_max)
    tmp_sum = np.sum(tmp_out, axis=-1, keepdims=True)
    return tmp_out / tmp_sum


def init_softmax(N=2, H=3, SM=8):
    rng = _rng()
    return (rng.random((N, H, SM, SM), dtype=np.float32),)


def spmv(A_row, A_col, A_val, x):
    y = np.empty(A_row.size - 1, A_val.dtype)

    for i in range(A_row.size - 1):
        cols = A_col[A_row[i]:A_row[i + 1]]
        vals = A_val[A_row[i]:A_row[i + 1]]
        y[i] = vals @ x[cols]

    return y


def init_spmv(M=8, N=10, nnz_per_row=3):
    # A CSR matrix like scipy.sparse.random(M, N, density, format='csr') gives (int32 indices)
    rng = _rng()
    counts = rng.integers(0, nnz_per_row + 1, size=M)
    A_row = np.zeros(M + 1, dtype=np.int32)
    A_row[1:] = np.cumsum(counts)
    A_col = np.concatenate([np.sort(rng.choice(N, size=c, replace=False)) for c in counts])
    A_col = A_col.astype(np.int32)
    A_val = rng.random(A_row[-1])
    x = rng.random(N)
    return A_row, A_col, A_val, x


def stockham_fft(N, R, K, x, y):
    # Generate DFT matrix for radix R.
    # Define transient variable for matrix.
    i_coord, j_coord = np.mgrid[0:R, 0:R]
    dft_mat = np.empty((R, R), dtype=np.complex128)
    dft_mat = np.exp(-2.0j * np.pi * i_coord * j_coord / R)
    # Move input x to output y
    # to avoid overwriting the input.
    y[:] = x[:]

    ii_coord, jj_coord = np.mgrid[0:R, 0:R**K]

    # Main Stockham loop
    for i in range(K):

        # Stride permutation
        yv = np.reshape(y, (R**i, R, R**(K - i - 1)))
        tmp_perm = np.transpose(yv, axes=(1, 0, 2))
        # Twiddle Factor multiplication
        D = np.empty((R, R**i, R**(K - i - 1)), dtype=np.complex128)
        tmp = np.exp(-2.0j * np.pi * ii_coord[:, :R**i] * jj_coord[:, :R**i] / R**(i + 1))
        D[:] = np.repeat(np.reshape(tmp, (R, R**i, 1)), R**(K - i - 1), axis=2)
        tmp_twid = np.reshape(tmp_perm, (N,)) * np.reshape(D, (N,))
        # Product with Butterfly
        y[:] = np.reshape(dft_mat @ np.reshape(tmp_twid, (R, R**(K - 1))), (N,))


def init_stockham_fft(R=2, K=4):
    rng = _rng()
    N = R**K
    x = rng.random((N,)) + 1j * rng.random((N,))
    y = np.zeros((N,), dtype=np.complex128)
    return N, R, K, x, y


# Adapted from https://github.com/GridTools/gt4py/blob/1caca893034a18d5df1522ed251486659f846589/tests/test_integration/stencil_definitions.py#L111
BET_M = 0.5
BET_P = 0.5


def vadv(utens_stage, u_stage, wcon, u_pos, utens, dtr_stage):
    I, J, K = utens_stage.shape[0], utens_stage.shape[1], utens_stage.shape[2]
    ccol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    dcol = np.ndarray((I, J, K), dtype=utens_stage.dtype)
    data_col = np.ndarray((I, J), dtype=utens_stage.dtype)

    for k in range(1):
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])
        cs = gcv * BET_M

        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - ccol[:, :, k]

        # update the d column
        correction_term = -cs * (u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] +
                         correction_term)

        # Thomas forward
        divided = 1.0 / bcol
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = dcol[:, :, k] * divided

    for k in range(1, K - 1):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        gcv = 0.25 * (wcon[1:, :, k + 1] + wcon[:-1, :, k + 1])

        as_ = gav * BET_M
        cs = gcv * BET_M

        acol = gav * BET_P
        ccol[:, :, k] = gcv * BET_P
        bcol = dtr_stage - acol - ccol[:, :, k]

        # update the d column
        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k]) - cs * (
            u_stage[:, :, k + 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] +
                         correction_term)

        # Thomas forward
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        ccol[:, :, k] = ccol[:, :, k] * divided
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided

    for k in range(K - 1, K):
        gav = -0.25 * (wcon[1:, :, k] + wcon[:-1, :, k])
        as_ = gav * BET_M
        acol = gav * BET_P
        bcol = dtr_stage - acol

        # update the d column
        correction_term = -as_ * (u_stage[:, :, k - 1] - u_stage[:, :, k])
        dcol[:, :, k] = (dtr_stage * u_pos[:, :, k] + utens[:, :, k] + utens_stage[:, :, k] +
                         correction_term)

        # Thomas forward
        divided = 1.0 / (bcol - ccol[:, :, k - 1] * acol)
        dcol[:, :, k] = (dcol[:, :, k] - (dcol[:, :, k - 1]) * acol) * divided

    for k in range(K - 1, K - 2, -1):
        datacol = dcol[:, :, k]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])

    for k in range(K - 2, -1, -1):
        datacol = dcol[:, :, k] - ccol[:, :, k] * data_col[:, :]
        data_col[:] = datacol
        utens_stage[:, :, k] = dtr_stage * (datacol - u_pos[:, :, k])


def init_vadv(I=6, J=5, K=8):
    rng = _rng()
    dtr_stage = 3. / 20.
    utens_stage = rng.random((I, J, K))
    u_stage = rng.random((I, J, K))
    wcon = rng.random((I + 1, J, K))
    u_pos = rng.random((I, J, K))
    utens = rng.random((I, J, K))
    return utens_stage, u_stage, wcon, u_pos, utens, dtr_stage


# --------------------------------------------------------------------------------------------
# Patterns of the suite that tracejit reproduces since issue 12 (our own kernels, same style)
# --------------------------------------------------------------------------------------------

def threshold_relax(TSTEPS, u, thresh):
    """Masked reads, stores and in-place updates with masks computed from the data."""
    energy = np.empty(TSTEPS, dtype=u.dtype)
    peak = np.zeros(TSTEPS)
    for t in range(TSTEPS):
        hot = u > thresh
        u[hot] -= 0.5 * (u[hot] - thresh)
        u[u < 0.2] = u[u < 0.2] * 2.0 + 0.05
        energy[t] = u[hot].sum()
        peak[t] = u[u > 0].max() - u[hot].mean()
    return energy, peak


def init_threshold_relax(TSTEPS=4, N=9):
    rng = _rng()
    return TSTEPS, rng.random((N, N)), 0.6


def segment_stats(offsets, values, weights):
    """Reductions over segments whose bounds are read from an array (CSR rows)."""
    n = offsets.size - 1
    means = np.zeros(n)
    dots = np.empty(n)
    for i in range(n):
        seg = values[offsets[i]:offsets[i + 1]]
        w = weights[offsets[i]:offsets[i + 1]]
        dots[i] = seg @ w
        means[i] = (seg * w).sum() / (w.sum() + 1.0)
    values[offsets[1]:offsets[2]] *= 2.0
    return means, dots


def init_segment_stats(N=7, NNZ=20):
    rng = _rng()
    cuts = np.sort(rng.integers(0, NNZ + 1, N - 1))
    offsets = np.concatenate(([0], cuts, [NNZ])).astype(np.int32)   # (empty rows included)
    return offsets, rng.random(NNZ), rng.random(NNZ)


def thomas_scratch(a, b, c, d):
    """A tridiagonal solve with np.ndarray(shape) scratch buffers, written back into d."""
    n = d.shape[0]
    cp = np.ndarray(n, dtype=d.dtype)
    dp = np.ndarray(d.shape, dtype=d.dtype)
    cp[0] = c[0] / b[0]
    dp[0] = d[0] / b[0]
    for i in range(1, n):
        m = b[i] - a[i] * cp[i - 1]
        cp[i] = c[i] / m
        dp[i] = (d[i] - a[i] * dp[i - 1]) / m
    x = np.ndarray(d.shape, dtype=d.dtype)
    x[-1] = dp[-1]
    for i in range(n - 2, -1, -1):
        x[i] = dp[i] - cp[i] * x[i + 1]
    d[:] = x
    return x


def init_thomas_scratch(N=8, M=3):
    rng = _rng()
    return rng.random(N), rng.random(N) + 3.0, rng.random(N), rng.random((N, M))


NAMES = [
    "adi", "arc_distance", "atax", "azimint_hist", "azimint_naive", "bicg", "cavity_flow",
    "channel_flow", "cholesky", "cholesky2", "compute", "contour_integral", "conv2d_bias",
    "correlation", "covariance", "crc16", "deriche", "doitgen", "durbin", "fdtd_2d",
    "floyd_warshall", "gemm", "gemver", "gesummv", "go_fast", "gramschmidt", "hdiff", "heat_3d",
    "jacobi_1d", "jacobi_2d", "k2mm", "k3mm", "lenet", "lu", "ludcmp", "mandelbrot1",
    "mandelbrot2", "mlp", "mvt", "nbody", "nussinov", "resnet", "scattering_self_energies",
    "seidel_2d", "softmax", "spmv", "stockham_fft", "symm", "syr2k", "syrk", "trisolv", "trmm",
    "vadv", "threshold_relax", "segment_stats", "thomas_scratch",
]

KERNELS = {name: (globals()[name], globals()["init_" + name]) for name in NAMES}
