<?php
/**
 * Plugin Name: Site State Demo
 * Description: An example whose activation changes the site in every way Codebox's site-state diff
 *              flags (docs/site-state.md): a table, options (one secret-like), a cron event and a new
 *              administrator.
 * Version: 1.0.0
 */

if (!defined('ABSPATH')) {
    exit;
}

function site_state_demo_activate() {
    global $wpdb;
    require_once ABSPATH . 'wp-admin/includes/upgrade.php';
    dbDelta("CREATE TABLE {$wpdb->prefix}site_state_demo_log (
        id bigint(20) unsigned NOT NULL AUTO_INCREMENT,
        message text NOT NULL,
        PRIMARY KEY  (id)
    ) {$wpdb->get_charset_collate()};");
    add_option('site_state_demo_version', '1.0.0');
    add_option('site_state_demo_api_key', 'sk-demo-0123456789abcdef');
    if (!wp_next_scheduled('site_state_demo_ping')) {
        wp_schedule_event(time() + 60, 'hourly', 'site_state_demo_ping');
    }
    if (!username_exists('site-state-demo-admin')) {
        wp_insert_user([
            'user_login' => 'site-state-demo-admin',
            'user_pass' => wp_generate_password(24),
            'user_email' => 'demo-admin@example.invalid',
            'role' => 'administrator',
        ]);
    }
}
register_activation_hook(__FILE__, 'site_state_demo_activate');
