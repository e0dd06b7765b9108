"""A batch of 1000 damped pendulums, 1000 explicit Euler steps in a fori_loop (a real loop in
the IR and in the machine code, not 1000 unrolled copies), and the gradient of the summed final
angle with respect to the initial state and the damping coefficient, checked against central
finite differences.
"""
import time

import numpy as np

import tracejit as tj

N, STEPS, DT, G_L = 1000, 1000, 0.01, 9.81


def final_angle(theta0, omega0, damping):
    def step(i, state):
        theta, omega = state
        return theta + DT * omega, omega - DT * (G_L * np.sin(theta) + damping * omega)
    theta, _ = tj.fori_loop(0, STEPS, step, (theta0, omega0))
    return np.sum(theta)


def main():
    rng = np.random.default_rng(0)
    theta0 = rng.uniform(-1.0, 1.0, N)
    omega0 = rng.uniform(-0.5, 0.5, N)
    damping = 0.3

    f = tj.trace(final_angle)
    g = tj.trace(tj.grad(final_angle, argnums=(0, 1, 2)))
    t0 = time.perf_counter()
    value = f(theta0, omega0, damping)
    t1 = time.perf_counter()
    d_theta, d_omega, d_damping = g(theta0, omega0, damping)
    t2 = time.perf_counter()
    print(f"sum of final angles: {float(value):.6f}   (first call {1e3 * (t1 - t0):.1f} ms)")
    print(f"gradient w.r.t. damping: {float(d_damping):.6f}   (first call {1e3 * (t2 - t1):.1f} ms)")
    print("IR of the simulation (one loop body, whatever the step count):")
    print(f.ir(theta0, omega0, damping))

    eps = 1e-6
    fd_damping = (final_angle(theta0, omega0, damping + eps) -
                  final_angle(theta0, omega0, damping - eps)) / (2 * eps)
    e = np.zeros(N)
    e[0] = 1.0
    fd_theta = (final_angle(theta0 + eps * e, omega0, damping) -
                final_angle(theta0 - eps * e, omega0, damping)) / (2 * eps)
    fd_omega = (final_angle(theta0, omega0 + eps * e, damping) -
                final_angle(theta0, omega0 - eps * e, damping)) / (2 * eps)
    print(f"finite differences: d/d damping {float(fd_damping):.6f}, "
          f"d/d theta0[0] {float(fd_theta):.6f} (AD {d_theta[0]:.6f}), "
          f"d/d omega0[0] {float(fd_omega):.6f} (AD {d_omega[0]:.6f})")
    assert np.isclose(d_damping, fd_damping, rtol=1e-5, atol=1e-6)
    assert np.isclose(d_theta[0], fd_theta, rtol=1e-5, atol=1e-6)
    assert np.isclose(d_omega[0], fd_omega, rtol=1e-5, atol=1e-6)
    print("gradients agree with finite differences")


if __name__ == "__main__":
    main()
