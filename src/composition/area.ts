import type { Module } from '../modules/module.ts';

/**
 * A part of the service built together: its modules in dependency order, and the services the
 * areas built after it use. Adding a module touches its own folder and one area file.
 */
export interface Area<S extends object> {
  modules: readonly Module<unknown>[];
  services: S;
}
