// A minimal Result / ResultAsync with the surface of neverthrow, the library
// infinisheet's ResultAsync extends (isOk/isErr, value/error, map, andThen, match,
// _unsafeUnwrap), so code written against infinisheet's EventLog and BlobStore reads the
// same. Kept here so that the package has no runtime dependency (see README for handing
// results to infinisheet's own ResultAsync class).

export type Result<T, E> = Ok<T, E> | Err<T, E>;

export class Ok<T, E> {
  constructor(readonly value: T) {}
  isOk(): this is Ok<T, E> {
    return true;
  }
  isErr(): this is Err<T, E> {
    return false;
  }
  map<U>(f: (value: T) => U): Result<U, E> {
    return new Ok<U, E>(f(this.value));
  }
  mapErr<F>(_f: (error: E) => F): Result<T, F> {
    return new Ok<T, F>(this.value);
  }
  andThen<U, F>(f: (value: T) => Result<U, F>): Result<U, E | F> {
    return f(this.value);
  }
  match<A>(ok: (value: T) => A, _err: (error: E) => A): A {
    return ok(this.value);
  }
  unwrapOr<A>(_fallback: A): T | A {
    return this.value;
  }
  _unsafeUnwrap(): T {
    return this.value;
  }
  _unsafeUnwrapErr(): E {
    throw new Error("called _unsafeUnwrapErr on an Ok");
  }
}

export class Err<T, E> {
  constructor(readonly error: E) {}
  isOk(): this is Ok<T, E> {
    return false;
  }
  isErr(): this is Err<T, E> {
    return true;
  }
  map<U>(_f: (value: T) => U): Result<U, E> {
    return new Err<U, E>(this.error);
  }
  mapErr<F>(f: (error: E) => F): Result<T, F> {
    return new Err<T, F>(f(this.error));
  }
  andThen<U, F>(_f: (value: T) => Result<U, F>): Result<U, E | F> {
    return new Err<U, E | F>(this.error);
  }
  match<A>(_ok: (value: T) => A, err: (error: E) => A): A {
    return err(this.error);
  }
  unwrapOr<A>(fallback: A): T | A {
    return fallback;
  }
  _unsafeUnwrap(): T {
    throw new Error("called _unsafeUnwrap on an Err: " + JSON.stringify(this.error));
  }
  _unsafeUnwrapErr(): E {
    return this.error;
  }
}

export function ok<T, E = never>(value: T): Result<T, E> {
  return new Ok<T, E>(value);
}

export function err<T = never, E = unknown>(error: E): Result<T, E> {
  return new Err<T, E>(error);
}

/** A Promise of a Result that never rejects; awaitable (PromiseLike). */
export class ResultAsync<T, E> implements PromiseLike<Result<T, E>> {
  readonly #promise: Promise<Result<T, E>>;

  constructor(promise: Promise<Result<T, E>>) {
    this.#promise = promise;
  }

  /** Runs `work`; a thrown error or rejection becomes Err(onThrow(error)). */
  static from<T, E>(
    work: () => Promise<Result<T, E>>,
    onThrow: (error: unknown) => E,
  ): ResultAsync<T, E> {
    let promise: Promise<Result<T, E>>;
    try {
      promise = work().catch((e: unknown) => err<T, E>(onThrow(e)));
    } catch (e) {
      promise = Promise.resolve(err<T, E>(onThrow(e)));
    }
    return new ResultAsync(promise);
  }

  map<U>(f: (value: T) => U): ResultAsync<U, E> {
    return new ResultAsync(this.#promise.then((r) => r.map(f)));
  }

  mapErr<F>(f: (error: E) => F): ResultAsync<T, F> {
    return new ResultAsync(this.#promise.then((r) => r.mapErr(f)));
  }

  then<A = Result<T, E>, B = never>(
    onfulfilled?: ((value: Result<T, E>) => A | PromiseLike<A>) | null,
    onrejected?: ((reason: unknown) => B | PromiseLike<B>) | null,
  ): PromiseLike<A | B> {
    return this.#promise.then(onfulfilled, onrejected);
  }
}

export function okAsync<T, E = never>(value: T): ResultAsync<T, E> {
  return new ResultAsync(Promise.resolve(ok<T, E>(value)));
}

export function errAsync<T = never, E = unknown>(error: E): ResultAsync<T, E> {
  return new ResultAsync(Promise.resolve(err<T, E>(error)));
}
