import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { discoverExtensions } from '../../platform/common/extension-discovery.js';
import { RETENTION_CONFIG } from './retention.config.js';
import type { RetentionConfig } from './retention.config.js';
import { ArchiveConnector } from './archive-connector.js';
import { archiverOf, DirectoryArchiveConnector } from './archive.js';
import type { RetentionArchiver } from './retention-engine.js';

/**
 * The archive connector `RETENTION_ARCHIVE_CONNECTOR` names (docs/retention.md, "Archiving"):
 * `directory` (under `RETENTION_ARCHIVE_DIR`), or any `ArchiveConnector` a module of the app
 * provides (docs/extending.md), found at start.
 */
@Injectable()
export class ArchiveConnectors implements OnModuleInit {
  private connector: ArchiveConnector | undefined;

  constructor(
    @Inject(RETENTION_CONFIG) private readonly config: RetentionConfig,
    private readonly discovery: DiscoveryService,
  ) {}

  /** @throws Error naming RETENTION_ARCHIVE_CONNECTOR and the known connectors when none has that name. */
  onModuleInit(): void {
    const { archiveClasses, archiveConnector, archiveDir } = this.config;
    if (!archiveClasses.length) return;
    const found = discoverExtensions(this.discovery, ArchiveConnector);
    this.connector =
      archiveConnector === 'directory' && archiveDir
        ? new DirectoryArchiveConnector(archiveDir)
        : found.find((c) => c.name === archiveConnector);
    if (!this.connector)
      throw new Error(
        `Invalid configuration:\n  - RETENTION_ARCHIVE_CONNECTOR: no connector '${archiveConnector}' (known: ${['directory', ...found.map((c) => c.name)].join(', ')})`,
      );
  }

  /** The archiver of the retention job; undefined when no class is archived. */
  archiver(): RetentionArchiver | undefined {
    return this.connector ? archiverOf(this.connector) : undefined;
  }
}
